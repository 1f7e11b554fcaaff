//! The page source: what an access method sees of page storage.
//!
//! A [`PageSource`] hands out latched page guards by [`PageId`]. The B+-tree is
//! generic over it, so the `main-memory` architecture ([`MemorySource`](crate::sources::MemorySource)) costs a
//! latch and an array index per fix, and the buffer manager ([`BufferManager`](crate::buffer::BufferManager))
//! adds its page table and tiers behind the same calls. The tree never learns which
//! tier a page is on.
//!
//! Rules every implementation keeps:
//! - a shared guard excludes exclusive guards of the same page and the reverse;
//! - a guard's bytes are the page's bytes for as long as the guard lives (a page is
//!   never moved or evicted while fixed);
//! - writing through an exclusive guard (`DerefMut`) marks the page dirty;
//! - a caller that waits for a latch while holding others takes them top-down and
//!   left-to-right (the B+-tree's coupling order); implementations only *try* latches
//!   they need for their own housekeeping, so they never add a cycle.

use std::ops::{Deref, DerefMut};

use crate::Result;
use crate::buffer::BufferError;
use crate::ids::{Lsn, PageId};

/// A page fixed shared: read-only bytes of exactly [`PageSource::page_size`] length.
pub trait SharedPage: Deref<Target = [u8]> {
    /// The page this guard holds.
    fn page_id(&self) -> PageId;
}

/// A page read optimistically: no latch is held and the bytes may change underneath.
/// Nothing read may be acted on (followed, returned, trusted to be consistent) before
/// [`validate`](Self::validate) returns true; a reader must also cope with nonsense
/// bytes (bounds-check everything) because it may see a write half done.
pub trait OptimisticPage: Deref<Target = [u8]> {
    /// True if no writer held or took the page since this guard was made.
    fn validate(&self) -> bool;
}

/// A page fixed exclusive. Mutable access marks it dirty.
pub trait ExclusivePage: DerefMut<Target = [u8]> {
    /// The page this guard holds.
    fn page_id(&self) -> PageId;

    /// Marks the page dirty without writing through the guard.
    fn mark_dirty(&mut self);

    /// True if this guard wrote to the page (or marked it dirty).
    fn wrote(&self) -> bool;

    /// Records that the log record at `lsn` describes a change to this page: the
    /// source forces the log up to it before the page is written out (the write-ahead
    /// rule). LSNs only grow; a smaller one is ignored.
    fn set_page_lsn(&mut self, lsn: Lsn);

    /// Tells the source that a full image of the page as it is now was logged (a
    /// structure change's). A source that logs its own write-backs (`nvm-direct`) then
    /// logs every line written since, not only those that differ from the stored page,
    /// because recovery installs the image before them.
    #[inline]
    fn image_logged(&mut self) {}
}

/// A page fixed for cache-line-grained access (three-tier paper §3.1–3.2): its bytes
/// are reached only through [`read`](Self::read) and [`write`](Self::write), which make
/// the lines they cover resident first (the paper's `MakeResident`), so a page backed
/// by NVM is loaded into DRAM only as far as it is used. A returned slice is valid until
/// the next call on the guard (lines of a mini page move when others are loaded).
///
/// A guard fixed shared that finds lines missing upgrades its latch if it is the only
/// holder; otherwise the call fails with [`BufferError::NeedsExclusive`] (a "cache line
/// fault" must change the page) and the caller fixes the page again exclusive.
///
/// [`BufferError::NeedsExclusive`]: crate::buffer::BufferError::NeedsExclusive
pub trait LinePage {
    /// The page this guard holds.
    fn page_id(&self) -> PageId;

    /// Bytes `off..off + len`, resident.
    ///
    /// # Errors
    /// `NeedsExclusive` (see above); `OutOfPage` for a range outside the page; loading
    /// from NVM failed.
    fn read(&mut self, off: usize, len: usize) -> Result<&[u8], BufferError>;

    /// Bytes `off..off + len`, resident, for writing: their lines are marked dirty, so
    /// only they are written back. Needs the guard exclusive (or upgradable).
    ///
    /// # Errors
    /// As [`read`](Self::read).
    fn write(&mut self, off: usize, len: usize) -> Result<&mut [u8], BufferError>;

    /// The whole page, resident (a mini page is promoted to a full frame first): for
    /// operations that touch most of it.
    ///
    /// # Errors
    /// As [`read`](Self::read).
    fn whole(&mut self) -> Result<&[u8], BufferError>;

    /// The whole page for writing; the page counts as dirty as a whole.
    ///
    /// # Errors
    /// As [`read`](Self::read).
    fn whole_mut(&mut self) -> Result<&mut [u8], BufferError>;

    /// As [`ExclusivePage::set_page_lsn`].
    fn set_page_lsn(&mut self, lsn: Lsn);
}

/// What [`PageSource::peek_child`] found.
pub enum Peek<G> {
    /// In memory, whole, and read optimistically through `G` (a DRAM frame).
    Resident(G),
    /// Only on SSD: a fix would read it ([`PageSource::prefetch_children`] can read it
    /// ahead).
    Missing,
    /// Anywhere else (moving, latched, partly loaded, in NVM), or not known: a fix
    /// finds out.
    Elsewhere,
}

/// Page storage with latched, fixed access.
pub trait PageSource: Send + Sync {
    /// The guard of a shared fix ([`fix_shared`](Self::fix_shared)).
    type Shared<'a>: SharedPage
    where
        Self: 'a;
    /// The guard of an exclusive fix ([`fix_exclusive`](Self::fix_exclusive)).
    type Exclusive<'a>: ExclusivePage
    where
        Self: 'a;
    /// The guard of an optimistic read ([`fix_optimistic`](Self::fix_optimistic)).
    type Optimistic<'a>: OptimisticPage
    where
        Self: 'a;
    /// The guard of a cache-line-grained fix ([`fix_lines`](Self::fix_lines)).
    type Lines<'a>: LinePage
    where
        Self: 'a;

    /// Bytes per page.
    fn page_size(&self) -> usize;

    /// Fixes a page for reading; waits while a writer holds it.
    ///
    /// # Errors
    /// The page does not exist, or loading it failed (I/O, checksum, pool exhausted).
    fn fix_shared(&self, pid: PageId) -> Result<Self::Shared<'_>, BufferError>;

    /// Reads a page optimistically (loading it first if it is not in DRAM); waits while
    /// a writer holds it.
    ///
    /// # Errors
    /// As [`fix_shared`](Self::fix_shared).
    fn fix_optimistic(&self, pid: PageId) -> Result<Self::Optimistic<'_>, BufferError>;

    /// Fixes a page for writing; waits while anyone else holds it.
    ///
    /// # Errors
    /// As [`fix_shared`](Self::fix_shared).
    fn fix_exclusive(&self, pid: PageId) -> Result<Self::Exclusive<'_>, BufferError>;

    /// Fixes a page for cache-line-grained access ([`LinePage`]), shared or exclusive. A
    /// source without NVM (or with cache-line-grained pages off) hands out the whole
    /// page behind the same interface.
    ///
    /// # Errors
    /// As [`fix_shared`](Self::fix_shared).
    fn fix_lines(&self, pid: PageId, exclusive: bool) -> Result<Self::Lines<'_>, BufferError>;

    /// Pointer swizzling (three-tier paper §3.3): the page that child reference `raw`,
    /// read from an inner node, names. A source that swizzles stores frame references
    /// (bit 63 set) in inner nodes while the child is in DRAM; it turns them back into
    /// page ids before anyone fixes the parent exclusive, so only readers see them. Call
    /// under the parent's latch, or validate the parent afterwards.
    #[inline]
    fn child_pid(&self, raw: u64) -> PageId {
        PageId(raw)
    }

    /// Reads child `raw` of `parent` (read optimistically; the reference lies at byte
    /// `offset` of it) optimistically. A source that swizzles follows a frame reference
    /// without the page table, and may swizzle the parent's reference to a child it
    /// finds in DRAM. The caller validates `parent` afterwards, as after any
    /// `fix_optimistic` of a child.
    ///
    /// # Errors
    /// As [`fix_optimistic`](Self::fix_optimistic).
    #[inline]
    fn fix_child_optimistic<'a>(
        &'a self,
        parent: &Self::Optimistic<'a>,
        offset: usize,
        raw: u64,
    ) -> Result<Self::Optimistic<'a>, BufferError> {
        let _ = (parent, offset);
        self.fix_optimistic(PageId(raw))
    }

    /// The child at `raw` in the optimistically read `parent` (at byte `offset` of it),
    /// read optimistically as well, if that loads nothing: the page is resident whole
    /// where it can be read in place (a DRAM frame). `None` when it is not, or when the
    /// source does not read leaves so; the caller then fixes it with
    /// [`fix_child_lines`](Self::fix_child_lines), which loads what is missing. Like
    /// every optimistic read, the bytes count only once the guard validates. The
    /// default reads nothing so.
    ///
    /// # Errors
    /// The page table's, for a page id out of range.
    #[inline]
    fn fix_child_resident<'a>(
        &'a self,
        parent: &Self::Optimistic<'a>,
        offset: usize,
        raw: u64,
    ) -> Result<Option<Self::Optimistic<'a>>, BufferError> {
        let _ = (parent, offset, raw);
        Ok(None)
    }

    /// [`fix_lines`](Self::fix_lines) of child `raw` of `parent`, as
    /// [`fix_child_optimistic`](Self::fix_child_optimistic) does for inner children.
    ///
    /// # Errors
    /// As [`fix_lines`](Self::fix_lines).
    #[inline]
    fn fix_child_lines<'a>(
        &'a self,
        parent: &Self::Optimistic<'a>,
        offset: usize,
        raw: u64,
        exclusive: bool,
    ) -> Result<Self::Lines<'a>, BufferError> {
        let _ = (parent, offset);
        self.fix_lines(PageId(raw), exclusive)
    }

    /// Whether [`prefetch_children`](Self::prefetch_children) reads anything: a source
    /// that holds every page in memory says no, and callers skip looking for pages to
    /// prefetch.
    #[inline]
    fn prefetches(&self) -> bool {
        false
    }

    /// Where child `raw` of the optimistically read `parent` is, with no side effect: no
    /// load, no hit counted, no policy told, nothing recorded, no reference swizzled (a
    /// look ahead, before the accesses that count). Like every optimistic read, the
    /// answer counts only once `parent` validates afterwards. The default knows nothing.
    ///
    /// # Errors
    /// The page table's, for a page id out of range.
    #[inline]
    fn peek_child<'a>(
        &'a self,
        parent: &Self::Optimistic<'a>,
        raw: u64,
    ) -> Result<Peek<Self::Optimistic<'a>>, BufferError> {
        let _ = (parent, raw);
        Ok(Peek::Elsewhere)
    }

    /// Where page `pid` is (a root, which no parent names), with no side effect, as
    /// [`peek_child`](Self::peek_child) says it of a child. The default knows nothing.
    ///
    /// # Errors
    /// The page table's, for a page id out of range.
    #[inline]
    fn peek_page(&self, pid: PageId) -> Result<Peek<Self::Optimistic<'_>>, BufferError> {
        let _ = pid;
        Ok(Peek::Elsewhere)
    }

    /// Starts reading the children that [`peek_child`](Self::peek_child) found
    /// [`Missing`](Peek::Missing), together (`(parent, raw)` each: the optimistically
    /// read parent and the reference in it), and returns once they are in memory: how
    /// many pages it read. Each child is claimed first and then its parent validated, so
    /// a child its parent no longer names (freed, moved) is never loaded.
    ///
    /// A hint: it changes no page and decides nothing a fix would not. A page that fails
    /// to read (an I/O error, a bad checksum) stays where it was, and the fix that needs
    /// it reads it again and reports the error. The default reads nothing.
    ///
    /// # Errors
    /// The source is stopped. (Where no frame can be made free it reads what it could
    /// make room for, and the fixes meet the error.)
    #[inline]
    fn prefetch_children<'a>(&'a self, children: &[(&Self::Optimistic<'a>, u64)]) -> Result<usize, BufferError> {
        let _ = children;
        Ok(0)
    }

    /// Allocates a page: zero-filled, fixed exclusive and dirty.
    ///
    /// # Errors
    /// `Full` when the storage holds no more pages (for architectures that refuse data
    /// larger than a tier), or the error of making room.
    fn allocate(&self) -> Result<Self::Exclusive<'_>, BufferError>;

    /// Frees a page the caller holds exclusive; its id may be handed out again.
    ///
    /// # Errors
    /// I/O failures while recording the free page.
    fn free(&self, page: Self::Exclusive<'_>) -> Result<(), BufferError>;

    /// The page that holds the catalog of named trees (allocated when the storage was
    /// created; never freed).
    fn catalog_page(&self) -> PageId;
}
