//! The B+-tree node: a slotted page laid out so that a point lookup reads few cache lines.
//!
//! The files, each depending only on those before it:
//!
//! - `format.rs`: the fixed sizes, the value limit, node kinds, little-endian fields,
//!   key heads and separators;
//! - `header.rs`: the header line (its byte layout is drawn above [`Header`]) and its
//!   checks;
//! - `view.rs`: [`NodeRef`], the checked read-only view of a node (the page layout, slots
//!   and entries are drawn above it);
//! - `search.rs`: the binary search over key heads and the lookup of a child;
//! - `edit.rs`: [`NodeMut`] (insert, remove, replace a value, compact) and [`Builder`],
//!   which writes a fresh node;
//! - `split.rs`: where a full node splits, and the split and merge of node contents.
//!
//! Invariants: keys are strictly increasing by slot; every key `k` satisfies
//! `lower <= k < upper` (fences are half-open; the lower fence of the leftmost node is the
//! empty key, which no key is below); the prefix is the longest common prefix of the two
//! fences (zero when the upper fence is infinite), so every key starts with it. An inner
//! node's entry `(sep_i, child_i)` covers `[sep_{i-1}, sep_i)` and its link covers
//! `[sep_{n-1}, upper)`. Bytes from heap start to the page end are exactly the live
//! entries, the fences and `garbage`.
//!
//! Reading is total: [`NodeRef::parse`] checks every header field against the page, and
//! every entry access is bounds checked, so arbitrary bytes give `NotATree`/`Corrupted`,
//! never a panic.
//!
//! Concurrency: node code works on byte slices and takes no latch. Callers hold the page
//! latched (shared to read, exclusive to change), or read it optimistically and trust
//! nothing they read until the page's version validates.

mod edit;
mod format;
mod header;
mod search;
mod split;
mod view;

pub use edit::{Builder, NodeMut};
pub use format::{
    CHILD_BYTES, ENTRY_HEADER_BYTES, HEAD_BYTES, HEADER_BYTES, INNER_ENTRY_BYTES_MAX, Kind, NODE_MAGIC, NodeResult,
    SLOT_BYTES, common_prefix_len, head_of, leaf_entry_bytes_max, value_bytes_max,
};
pub use header::{Header, OFF_PAGE_LSN};
pub(super) use header::{OFF_COUNT, OFF_GARBAGE, OFF_HEAP_START};
pub use split::{merge_fits, merge_into, plan_split, split_into};
pub use view::NodeRef;

#[cfg(test)]
mod tests;
