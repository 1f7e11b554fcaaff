//! Reads ahead: the pages a batch of lookups will need, read from SSD together (issue
//! 20 item 2). Out of memory a lookup waits for one SSD read, so a thread that looks
//! keys up one after another keeps one read in flight however deep the device's queue
//! is; a caller that knows its next keys (a multi-get, a join, a batch of YCSB
//! operations) first looks where each key's path leaves memory
//! ([`PageSource::peek_child`](crate::PageSource::peek_child)), then has those pages read in one io_uring submission
//! ([`PageSource::prefetch_children`](crate::PageSource::prefetch_children)), then runs the lookups, which find them in DRAM.
//!
//! A prefetch is a miss done early: the page is claimed in the page table, given a
//! free frame (evicting as a miss evicts), read, checked against its seal, offered to
//! the policy as an SSD miss ([`Policy::ssd_miss`](super::policy::Policy::ssd_miss),
//! which may admit it to NVM as well) and published, exactly as
//! [`load`](BufferManager::load) does, only with the reads of a batch in flight
//! together. What it never does is decide anything a fix would not: it counts no hit,
//! records no access, swizzles no reference; the lookup that follows does those.
//!
//! Only pages a live parent names are read. The child reference was read from a parent
//! read optimistically; after claiming the child's entry, the parent is validated: if
//! it changed, the reference may name a page freed since (whose SSD bytes are stale)
//! and the claim is undone. If it did not, the child was the parent's child when it was
//! claimed, and a claimed page can be neither loaded nor freed by anyone else.

use std::sync::atomic::Ordering;

use super::{BufferManager, Count, Entry, FrameId, FrameWrite, PageInfo};
use crate::Result;
use crate::buffer::BufferError;
use crate::ids::{AtomicLsn, PageId};
use crate::limits::PREFETCH_PAGES_MAX;
use crate::page::Swip;
use crate::page::frame::FrameMeta;
use crate::page::frame::in_place::BmOptimistic;
use crate::page::source::{OptimisticPage, Peek};

impl BufferManager {
    /// Where child `raw` of `parent` is, with no side effect ([`PageSource::peek_child`]:
    /// no hit counted, nothing touched, recorded or swizzled).
    ///
    /// [`PageSource::peek_child`]: crate::PageSource::peek_child
    pub(super) fn peek_child_of<'a>(
        &'a self,
        parent: &BmOptimistic<'a>,
        raw: u64,
    ) -> Result<Peek<BmOptimistic<'a>>, BufferError> {
        // A parent read in place in NVM: its children are found by the fix.
        let Some(dram_parent) = parent.dram() else { return Ok(Peek::Elsewhere) };
        if !Swip::from_raw(raw).is_swizzled() {
            return self.peek_page(PageId(raw));
        }
        let f = Swip::from_raw(raw).frame_index();
        if f >= self.frames.len() {
            return Ok(Peek::Elsewhere); // nonsense read from a changing parent
        }
        Ok(self.peek_frame(FrameId::from_index(f), |m| m.parent.load(Ordering::Relaxed) == dram_parent.frame().get()))
    }

    /// Where page `pid` is, with no side effect ([`PageSource::peek_page`]).
    ///
    /// [`PageSource::peek_page`]: crate::PageSource::peek_page
    pub(super) fn peek_page(&self, pid: PageId) -> Result<Peek<BmOptimistic<'_>>, BufferError> {
        Ok(match Entry::decode(self.table.slot(pid)?.load(Ordering::Acquire)) {
            Entry::Dram(f) => self.peek_frame(f, |m| m.pid() == pid.0),
            Entry::Empty if self.ssd.is_some() => Peek::Missing,
            _ => Peek::Elsewhere,
        })
    }

    /// Frame `f` read optimistically if it holds the page `ours` says (checked on its
    /// metadata) resident whole. As in `fix_child_resident`: a frame given to another
    /// page meanwhile has a new version too, which the caller's validation notices.
    fn peek_frame(&self, f: FrameId, ours: impl Fn(&FrameMeta) -> bool) -> Peek<BmOptimistic<'_>> {
        self.frames.prefetch(f);
        let Some(g) = self.frames.try_optimistic(f) else { return Peek::Elsewhere };
        if !ours(g.meta()) || !g.meta().resident_all.load(Ordering::Relaxed) {
            return Peek::Elsewhere;
        }
        Peek::Resident(BmOptimistic::Dram(g))
    }

    /// Reads the missing `children` (`(parent, page id)` each) from SSD, up to
    /// [`PREFETCH_PAGES_MAX`] (at most a quarter of the DRAM pool) in flight at once,
    /// into DRAM frames ([`PageSource::prefetch_children`]); how many it read.
    ///
    /// # Errors
    /// `Stopped`. (Where no frame can be made free it reads what it has frames for.)
    ///
    /// [`PageSource::prefetch_children`]: crate::PageSource::prefetch_children
    pub(super) fn prefetch<'a>(&'a self, children: &[(&BmOptimistic<'a>, u64)]) -> Result<usize, BufferError> {
        self.check_stopped()?;
        let Some(ssd) = &self.ssd else { return Ok(0) };
        let round = PREFETCH_PAGES_MAX.min(self.frames.len() / 4).max(1);
        let mut read = 0;
        let mut rest = children;
        while !rest.is_empty() {
            // 1. Claim the pages of this round that are still only on SSD, each named
            //    by a parent that validates after the claim.
            let mut claimed: Vec<(PageId, Option<FrameWrite<'_>>)> = Vec::with_capacity(round);
            let mut taken = 0;
            for &(parent, raw) in rest {
                if claimed.len() == round {
                    break;
                }
                taken += 1;
                if Swip::from_raw(raw).is_swizzled() {
                    continue;
                }
                let pid = PageId(raw);
                if pid.0 == 0 || pid.0 >= self.next_pid.load(Ordering::Acquire) || pid.0 >= ssd.page_count() {
                    continue; // never written to SSD: a fix sees to it
                }
                if !matches!(self.table.claim(pid, Entry::Empty), Ok(true)) {
                    continue; // resident, moving, or already claimed (another key's)
                }
                if !parent.validate() {
                    self.table.set(pid, Entry::Empty);
                    continue;
                }
                claimed.push((pid, None));
            }
            rest = &rest[taken..];
            // 2. A free frame for each (evicting as a miss does). Where none can be made
            //    free, the read ahead ends with the pages that got one: the lookups load
            //    the others themselves (and meet the error, if it lasts).
            let mut short = false;
            for slot in &mut claimed {
                match self.free_frame() {
                    Ok(g) => slot.1 = Some(g),
                    Err(_) => {
                        short = true;
                        break;
                    }
                }
            }
            let mut frames: Vec<(PageId, FrameWrite<'_>)> = Vec::with_capacity(claimed.len());
            for (pid, g) in claimed {
                match g {
                    Some(g) => frames.push((pid, g)),
                    None => self.table.set(pid, Entry::Empty),
                }
            }
            if short {
                rest = &[];
            }
            // 3. The reads, in flight together.
            let results = {
                let mut bufs: Vec<(PageId, &mut [u8])> =
                    frames.iter_mut().map(|(pid, g)| (*pid, g.bytes_for_load())).collect();
                ssd.read_pages_flushed(&mut bufs)
            };
            // 4. Each page checked and published as a miss publishes it.
            for ((pid, mut g), r) in frames.into_iter().zip(results) {
                let info = PageInfo::fixing(pid, false);
                let done = r.map_err(Into::into).and_then(|flushed| {
                    g.meta().flush_lsn.store_lsn(flushed, Ordering::Relaxed);
                    self.after_ssd_read(&info, &mut g, None)
                });
                match done {
                    Ok(()) => {
                        self.counters.bump(Count::PrefetchReads);
                        // Released at once: the lookups that follow fix it.
                        if self.install(pid, Entry::Empty, g).is_ok() {
                            read += 1;
                        }
                    }
                    // Left on SSD: the fix that needs it reads it and reports the error.
                    Err(_) => {
                        self.table.set(pid, Entry::Empty);
                        self.return_frame(g);
                    }
                }
            }
        }
        Ok(read)
    }
}
