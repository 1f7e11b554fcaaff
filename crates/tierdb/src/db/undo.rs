//! How one change of a transaction is undone: the old value put back (or the key
//! removed), or the old bytes of a patch written back. A live transaction keeps an
//! [`UndoStep`] per change (`txn.rs`); recovery builds the [`Undo`] of a loser's change
//! from its update record (`recovery.rs`). Undo goes through a logged tree, so each
//! step is logged as a compensation record.
//!
//! Invariant: the transaction holds the key's lock while it undoes, so the key a
//! patch's undo needs is still there.

use crate::Result;
use crate::btree::BTree;
use crate::ids::PageId;
use crate::page::PageSource;
use crate::wal::Lsn;

/// One change of a transaction, for its rollback.
pub(super) struct UndoStep {
    /// The root of the key's tree.
    pub(super) root: PageId,
    /// The key changed.
    pub(super) key: Vec<u8>,
    /// How to undo the change.
    pub(super) undo: Undo,
    /// The transaction's record before the change's (0: none): where its compensation
    /// says undo continues.
    pub(super) undo_next: Lsn,
}

/// How to undo one change of a key.
pub(super) enum Undo {
    /// Put the old value back, or delete the key if it had none.
    Restore(Option<Vec<u8>>),
    /// Write the old bytes back at `offset` in the value.
    Patch { offset: usize, old: Vec<u8> },
}

impl Undo {
    /// The undo of a logged update whose payload held `patch_offset` and `old`: the
    /// old bytes of a patch written back, else the old value restored (none: the
    /// update inserted the key, which goes).
    pub(super) fn of_update(patch_offset: Option<usize>, old: Option<Vec<u8>>) -> Undo {
        match (patch_offset, old) {
            (Some(offset), Some(old)) => Undo::Patch { offset, old },
            (_, old) => Undo::Restore(old),
        }
    }

    /// The change a logged compensation made, to make it again (`delete`, else
    /// `value` written at `patch_offset` or as the whole value).
    pub(super) fn repeating(delete: bool, patch_offset: Option<usize>, value: Vec<u8>) -> Undo {
        match (delete, patch_offset) {
            (true, _) => Undo::Restore(None),
            (false, Some(offset)) => Undo::Patch { offset, old: value },
            (false, None) => Undo::Restore(Some(value)),
        }
    }

    /// Applies the undo to `key` through `tree` (a logged tree: compensation records).
    /// False if it patches a key that is gone (which the key lock rules out).
    pub(super) fn apply<S: PageSource>(self, tree: &BTree<'_, S>, key: &[u8]) -> Result<bool> {
        match self {
            Undo::Restore(Some(v)) => Ok(tree.upsert(key, &v).map(|()| true)?),
            Undo::Restore(None) => Ok(tree.delete(key).map(|_| true)?),
            Undo::Patch { offset, old } => Ok(tree.update_in_place(key, offset, &old)?),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ByteSize;
    use crate::device::DramConfig;
    use crate::sources::MemorySource;

    fn source() -> MemorySource {
        let mut cfg = DramConfig::new(ByteSize(4096 * 16));
        cfg.frame_bytes = 4096;
        cfg.huge_pages = false;
        MemorySource::new(&cfg).unwrap()
    }

    fn get(t: &BTree<'_, MemorySource>, k: &[u8]) -> Option<Vec<u8>> {
        t.get(k, <[u8]>::to_vec).unwrap()
    }

    #[test]
    fn each_undo_puts_the_key_back_as_it_was() {
        let src = source();
        let t = BTree::create(&src).unwrap();
        // An insert's undo removes the key.
        t.upsert(b"a", b"1").unwrap();
        assert!(Undo::of_update(None, None).apply(&t, b"a").unwrap());
        assert_eq!(get(&t, b"a"), None);
        // A put's or a delete's undo restores the old value.
        t.upsert(b"b", b"new").unwrap();
        assert!(Undo::of_update(None, Some(b"old".to_vec())).apply(&t, b"b").unwrap());
        assert_eq!(get(&t, b"b").as_deref(), Some(&b"old"[..]));
        // A patch's undo writes the old bytes back in place.
        t.update_in_place(b"b", 1, b"LD").unwrap();
        assert!(Undo::of_update(Some(1), Some(b"ld".to_vec())).apply(&t, b"b").unwrap());
        assert_eq!(get(&t, b"b").as_deref(), Some(&b"old"[..]));
        // A patch of a key that is gone is reported, not applied.
        assert!(!Undo::of_update(Some(0), Some(b"x".to_vec())).apply(&t, b"zz").unwrap());
    }

    #[test]
    fn a_repeated_compensation_makes_its_change_again() {
        let src = source();
        let t = BTree::create(&src).unwrap();
        t.upsert(b"k", b"abc").unwrap();
        assert!(Undo::repeating(false, Some(1), b"X".to_vec()).apply(&t, b"k").unwrap());
        assert_eq!(get(&t, b"k").as_deref(), Some(&b"aXc"[..]));
        assert!(Undo::repeating(false, None, b"v".to_vec()).apply(&t, b"k").unwrap());
        assert_eq!(get(&t, b"k").as_deref(), Some(&b"v"[..]));
        assert!(Undo::repeating(true, None, Vec::new()).apply(&t, b"k").unwrap());
        assert_eq!(get(&t, b"k"), None);
    }
}
