//! Snapshot isolation: the version store and read views.
//!
//! The tree always holds the newest value of a key, committed or not; undo puts old
//! values back on rollback (`txn.rs`). The version store keeps, in DRAM only, what a
//! reader needs besides the tree:
//!
//! - a **version** per key written by a running transaction: the key's committed value
//!   before the transaction's first change of it (its *before-image*), recorded before
//!   the tree changes. A reader other than the writer reads the before-image;
//! - once the writer commits, its versions get its **commit timestamp** (one atomic
//!   store, the writer's state is shared by its versions) and stay while a snapshot
//!   older than the commit runs: such a reader reads the before-image of the first
//!   version committed after its snapshot. They are collected once every running
//!   snapshot is at least as new as their commit (`collect`).
//!
//! A **view** is what a reader sees: a snapshot (the last commit timestamp published
//! when it began: [`Isolation::Snapshot`]), or the latest commit at each read
//! ([`Isolation::ReadCommitted`], non-transactional point reads), and its own
//! transaction's changes. Views with a snapshot are registered so that collection
//! keeps what they need; a read-only transaction writes nothing (no log record, no
//! version).
//!
//! Races between a read (tree, then versions) and writers:
//! - a writer records its version before it changes the tree, and keeps it until the
//!   change is committed and no snapshot needs it or rolled back, so a reader that saw
//!   an uncommitted change in the tree finds its version afterwards;
//! - a rollback removes versions only after the tree holds the old value again, and
//!   bumps [`Mvcc::aborts`] in between: a reader that saw the rolled-back value in the
//!   tree and then missed the version sees the counter moved and reads again;
//! - the commit timestamp is assigned and published under one mutex, in order: a
//!   snapshot that covers a commit sees every version of it stamped.
//!
//! Bound: committed versions kept for snapshots are counted in bytes; past
//! [`DbConfig::version_bytes_max`](super::DbConfig::version_bytes_max) the oldest
//! snapshots are ended (their transactions fail with `SnapshotTooOld` on their next
//! operation) until collection brings the bytes back under the limit. Versions are
//! volatile: recovery does not know them, and no snapshot survives a crash.
//!
//! Concurrency: versions in [`SHARDS`] mutex-protected hash maps by (tree, key); the
//! views' registry, the commit clock and the collection queue behind their own
//! mutexes. Lock order: a shard's mutex is never held while taking another lock, nor
//! while a page latch is taken.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::hash::{BuildHasher, Hasher};
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use parking_lot::Mutex;

use crate::Result;
use crate::ids::TxnId;

use super::config::{DbError, Isolation};

/// Hash maps the versions are spread over.
pub(super) const SHARDS: usize = 64;

/// Slots that register running snapshots without a lock; more at once go to the
/// shared registry.
pub(super) const SLOTS: usize = 128;

/// Slots a registration tries from its thread's own on.
const SLOT_TRIES: usize = 8;

/// A free slot.
const FREE: u64 = u64::MAX;

/// A slot being claimed: its snapshot is not known yet (a collection keeps all).
const CLAIMING: u64 = u64::MAX - 1;

/// A slot whose snapshot the limit ended (a collection ignores it).
const ENDED: u64 = u64::MAX - 2;

std::thread_local! {
    /// The slot a thread tries first: threads spread over the slots.
    static SLOT_HINT: usize = {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        NEXT.fetch_add(1, Ordering::Relaxed).wrapping_mul(SLOT_TRIES) % SLOTS
    };
}

/// A registration slot: a running snapshot, or [`FREE`], [`CLAIMING`], [`ENDED`]. On a
/// cache line of its own.
#[repr(align(64))]
struct Slot(AtomicU64);

/// Bytes a version costs besides its key and before-image (its entry, the writer's
/// state, the collection queue's key), for the limit.
const VERSION_OVERHEAD_BYTES: u64 = 96;

/// A writer's commit timestamp while it runs.
const RUNNING: u64 = 0;

/// The snapshot of a view that reads the latest commit at each read.
const LATEST: u64 = u64::MAX;

/// A transaction that writes: its id and its commit timestamp ([`RUNNING`] until it
/// commits), shared by all its versions.
pub(super) struct Writer {
    txn: TxnId,
    cts: AtomicU64,
    /// Bytes its versions cost ([`VERSION_OVERHEAD_BYTES`] each, with key and
    /// before-image), counted as they are recorded.
    bytes: AtomicU64,
}

/// One version of a key: the value before `writer`'s first change of it.
struct Version {
    writer: Arc<Writer>,
    before: Option<Box<[u8]>>,
}

/// The versions of one key, oldest first (writers of a key are serialised by its lock,
/// so commit timestamps increase along the chain).
struct Chain {
    root: u64,
    key: Box<[u8]>,
    versions: Vec<Version>,
}

/// One shard: chains by the hash of (tree, key); a bucket holds the rare collisions.
type Shard = HashMap<u64, Vec<Chain>, NoHash>;

/// The keys are hashes already.
#[derive(Clone, Copy, Default)]
struct NoHash;

impl BuildHasher for NoHash {
    type Hasher = NoHasher;
    fn build_hasher(&self) -> NoHasher {
        NoHasher(0)
    }
}

#[derive(Default)]
struct NoHasher(u64);

impl Hasher for NoHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8) | u64::from(*b);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

/// The hash of (tree, key): FNV-1a over the key, mixed with the root.
fn key_hash(root: u64, key: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ root.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    for &b in key {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h ^ (h >> 29)
}

/// Registered snapshots: (snapshot, view id) → its "ended" flag.
#[derive(Default)]
struct Registry {
    views: BTreeMap<(u64, u64), Arc<AtomicBool>>,
    next_id: u64,
}

/// Keys a transaction wrote: (tree root, key).
pub(super) type WrittenKeys = Vec<(u64, Box<[u8]>)>;

/// A committed writer whose versions wait for collection: its commit timestamp, its
/// keys, its state.
type Committed = (u64, WrittenKeys, Arc<Writer>);

/// What the version store knows and counts.
pub(super) struct Mvcc {
    isolation: Isolation,
    bytes_max: u64,
    shards: Box<[Mutex<Shard>]>,
    /// Versions in the shards (a read skips the shards while none is).
    live: AtomicUsize,
    /// Rollbacks that removed versions (a read that saw one start or end reads again).
    aborts: AtomicU64,
    /// The newest commit timestamp published.
    last_committed: AtomicU64,
    /// Assigns and publishes commit timestamps in order.
    clock: Mutex<()>,
    /// Running snapshots, one per slot.
    slots: Box<[Slot]>,
    /// Slots below this index have been claimed at some time (a collection scans only
    /// those).
    slots_used: AtomicUsize,
    /// Snapshots registered beyond the slots, and those of `Db::range` iterators.
    registry: Arc<Mutex<Registry>>,
    /// Views in `registry` (a collection skips its lock while there are none).
    shared: Arc<AtomicUsize>,
    /// Committed writers whose versions are kept, in commit order, with their keys.
    committed: Mutex<VecDeque<Committed>>,
    /// Entries of `committed` (read without its lock at every transaction's end).
    queued: AtomicUsize,
    /// Bytes of committed versions kept.
    bytes: AtomicU64,
    /// Snapshots ended by the limit.
    ended: AtomicU64,
    /// The view of non-transactional point reads (the latest commit at each read).
    latest: ReadView,
}

impl Mvcc {
    /// A version store for transactions of `isolation`, keeping at most `bytes_max`
    /// bytes of before-images for snapshots.
    pub(super) fn new(isolation: Isolation, bytes_max: u64) -> Mvcc {
        Mvcc {
            isolation,
            bytes_max,
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            live: AtomicUsize::new(0),
            aborts: AtomicU64::new(0),
            last_committed: AtomicU64::new(0),
            clock: Mutex::new(()),
            slots: (0..SLOTS).map(|_| Slot(AtomicU64::new(FREE))).collect(),
            slots_used: AtomicUsize::new(0),
            registry: Arc::new(Mutex::new(Registry::default())),
            shared: Arc::new(AtomicUsize::new(0)),
            committed: Mutex::new(VecDeque::new()),
            queued: AtomicUsize::new(0),
            bytes: AtomicU64::new(0),
            ended: AtomicU64::new(0),
            latest: ReadView {
                txn: TxnId::NONE,
                snapshot: LATEST,
                isolation,
                reg: Reg::None,
                writer: OnceWriter::default(),
            },
        }
    }

    /// The isolation of the database's transactions.
    pub(super) fn isolation(&self) -> Isolation {
        self.isolation
    }

    /// Rollbacks that removed versions so far (a read brackets itself with two loads).
    pub(super) fn aborts(&self) -> u64 {
        self.aborts.load(Ordering::SeqCst)
    }

    /// True if no version is kept (a read need not look).
    pub(super) fn empty(&self) -> bool {
        self.live.load(Ordering::SeqCst) == 0
    }

    /// True if committed versions wait for collection.
    pub(super) fn has_committed(&self) -> bool {
        self.queued.load(Ordering::Relaxed) > 0
    }

    /// What the store holds now.
    pub(super) fn stats(&self) -> MvccStats {
        MvccStats {
            versions: self.live.load(Ordering::Relaxed) as u64,
            committed_bytes: self.bytes.load(Ordering::Relaxed),
            snapshots: self.registry.lock().views.len() as u64
                + self.slots.iter().filter(|s| s.0.load(Ordering::Relaxed) != FREE).count() as u64,
            snapshots_ended: self.ended.load(Ordering::Relaxed),
            last_commit: self.last_committed.load(Ordering::Relaxed),
        }
    }

    /// The view of a transaction `txn` starting now, registered (snapshot isolation
    /// and read committed: collection keeps what it may read) in a slot until
    /// [`release`](Self::release).
    pub(super) fn begin_view(&self, txn: TxnId) -> ReadView {
        match self.isolation {
            Isolation::ReadUncommitted => self.unregistered(txn),
            // Read committed reads the latest commit at each read, registered at its
            // start: a newer snapshot needs no more than the registered one keeps.
            Isolation::Snapshot => self.registered(txn, false),
            Isolation::ReadCommitted => self.registered(txn, true),
        }
    }

    /// The view of a non-transactional reader that lasts (an iterator of `Db::range`):
    /// a snapshot of the latest commit, without a transaction, registered until the
    /// view is dropped.
    pub(super) fn snapshot_view(&self) -> ReadView {
        if self.isolation == Isolation::ReadUncommitted {
            return self.unregistered(TxnId::NONE);
        }
        let ended = Arc::new(AtomicBool::new(false));
        let mut reg = self.registry.lock();
        // Under the registry's mutex: a collection that reads the registry after this
        // sees the snapshot; one before it kept everything newer than the commit
        // published then, which is not newer than this snapshot.
        let snapshot = self.last_committed.load(Ordering::SeqCst);
        let id = reg.next_id;
        reg.next_id += 1;
        reg.views.insert((snapshot, id), ended.clone());
        self.shared.fetch_add(1, Ordering::SeqCst);
        drop(reg);
        ReadView {
            txn: TxnId::NONE,
            snapshot,
            isolation: self.isolation,
            reg: Reg::Shared(Registration {
                registry: self.registry.clone(),
                shared: self.shared.clone(),
                key: (snapshot, id),
                ended,
            }),
            writer: OnceWriter::default(),
        }
    }

    /// The view of a non-transactional point read: the latest committed state.
    pub(super) fn latest_view(&self) -> &ReadView {
        &self.latest
    }

    /// A view that registers nothing: of the latest commit at each read.
    pub(super) fn unregistered(&self, txn: TxnId) -> ReadView {
        ReadView { txn, snapshot: LATEST, isolation: self.isolation, reg: Reg::None, writer: OnceWriter::default() }
    }

    /// A registered view: of the snapshot taken now, or (`per_read`) of the latest
    /// commit at each read, with the registration of now keeping what it may read.
    /// Registration takes a free slot near the thread's own (a compare-and-swap and two
    /// stores; no allocation, no lock), or the shared registry if none is free.
    fn registered(&self, txn: TxnId, per_read: bool) -> ReadView {
        let hint = SLOT_HINT.with(|h| *h);
        for i in 0..SLOT_TRIES {
            let idx = (hint + i) % SLOTS;
            let slot = &self.slots[idx].0;
            if self.slots_used.load(Ordering::Relaxed) <= idx {
                self.slots_used.fetch_max(idx + 1, Ordering::SeqCst);
            }
            if slot.compare_exchange(FREE, CLAIMING, Ordering::SeqCst, Ordering::Relaxed).is_ok() {
                // A collection that saw the slot free read the last commit before this
                // load; one that sees it claiming collects nothing.
                let snapshot = self.last_committed.load(Ordering::SeqCst);
                slot.store(snapshot, Ordering::SeqCst);
                return ReadView {
                    txn,
                    snapshot: if per_read { LATEST } else { snapshot },
                    isolation: self.isolation,
                    reg: Reg::Slot(idx),
                    writer: OnceWriter::default(),
                };
            }
        }
        let mut v = self.snapshot_view();
        v.txn = txn;
        if per_read {
            v.snapshot = LATEST;
        }
        v
    }

    /// Ends `view`'s registration (a transaction's, at its end): collection no longer
    /// keeps what it may read, and it reads the latest commit from now on.
    pub(super) fn release(&self, view: &mut ReadView) {
        if let Reg::Slot(idx) = view.reg {
            self.slots[idx].0.store(FREE, Ordering::SeqCst);
        }
        view.reg = Reg::None;
        view.snapshot = LATEST;
    }

    fn shard(&self, h: u64) -> &Mutex<Shard> {
        &self.shards[(h as usize) % SHARDS]
    }

    /// What `view` reads of `key` instead of the tree's value (its snapshot `s`):
    /// `None` if the tree's value is right; `Some(before)` if a version says it is not.
    pub(super) fn resolve(&self, view: &ReadView, s: u64, root: u64, key: &[u8]) -> Option<Option<Vec<u8>>> {
        let h = key_hash(root, key);
        let shard = self.shard(h).lock();
        let chain = shard.get(&h)?.iter().find(|c| c.root == root && *c.key == *key)?;
        for v in &chain.versions {
            let cts = v.writer.cts.load(Ordering::Acquire);
            let visible = if cts == RUNNING { v.writer.txn == view.txn && !view.txn.is_none() } else { cts <= s };
            if !visible {
                return Some(v.before.as_deref().map(<[u8]>::to_vec));
            }
        }
        None
    }

    /// Keys of the tree rooted at `root` in `lo..hi` that have versions (a view may see
    /// one of them where the tree no longer holds it).
    pub(super) fn keys_in(&self, root: u64, lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for shard in self.shards.iter() {
            let shard = shard.lock();
            for chain in shard.values().flatten() {
                if chain.root == root && RangeBounds::<[u8]>::contains::<[u8]>(&(lo, hi), &chain.key) {
                    out.push(chain.key.to_vec());
                }
            }
        }
        out
    }

    /// Before `writer` first changes `key` (it holds the key's lock): fails if the key
    /// was committed after `view`'s snapshot (snapshot isolation), else records `before`
    /// (the key's committed value, read by the caller under the lock) as a version.
    pub(super) fn record(
        &self,
        view: &ReadView,
        root: u64,
        key: &[u8],
        before: Option<Vec<u8>>,
    ) -> Result<(), Conflict> {
        let writer = view.writer.get(view.txn);
        let h = key_hash(root, key);
        let mut shard = self.shard(h).lock();
        let bucket = shard.entry(h).or_default();
        let chain = match bucket.iter_mut().position(|c| c.root == root && *c.key == *key) {
            Some(i) => &mut bucket[i],
            None => {
                bucket.push(Chain { root, key: key.into(), versions: Vec::new() });
                bucket.last_mut().expect("pushed")
            }
        };
        if view.isolation == Isolation::Snapshot {
            let s = view.snapshot;
            if chain.versions.iter().any(|v| {
                let cts = v.writer.cts.load(Ordering::Acquire);
                cts != RUNNING && cts > s
            }) {
                if chain.versions.is_empty() {
                    bucket.retain(|c| !c.versions.is_empty());
                }
                return Err(Conflict);
            }
        }
        debug_assert!(
            chain.versions.iter().all(|v| v.writer.cts.load(Ordering::Relaxed) != RUNNING),
            "{}: a running writer's version of a key it does not hold",
            view.txn
        );
        // Counted before the tree changes (SeqCst: a read that sees the change sees
        // the count).
        self.live.fetch_add(1, Ordering::SeqCst);
        let cost = key.len() as u64 + before.as_ref().map_or(0, |b| b.len() as u64) + VERSION_OVERHEAD_BYTES;
        writer.bytes.fetch_add(cost, Ordering::Relaxed);
        chain.versions.push(Version { writer, before: before.map(Vec::into_boxed_slice) });
        Ok(())
    }

    /// `key` was committed after the snapshot of `view`: the check of `record` alone.
    pub(super) fn conflicts(&self, view: &ReadView, root: u64, key: &[u8]) -> bool {
        if view.isolation != Isolation::Snapshot {
            return false;
        }
        let h = key_hash(root, key);
        let shard = self.shard(h).lock();
        shard.get(&h).and_then(|b| b.iter().find(|c| c.root == root && *c.key == *key)).is_some_and(|c| {
            c.versions.iter().any(|v| {
                let cts = v.writer.cts.load(Ordering::Acquire);
                cts != RUNNING && cts > view.snapshot
            })
        })
    }

    /// The transaction of `view` committed (its records durable): its versions get the
    /// next commit timestamp, published in order; they are kept for older snapshots
    /// and collected when none needs them.
    pub(super) fn commit(&self, view: &ReadView, keys: WrittenKeys) {
        let Some(writer) = view.writer.peek() else {
            assert!(keys.is_empty(), "{}: {} versioned keys and no writer", view.txn, keys.len());
            return;
        };
        let cts = {
            let _clock = self.clock.lock();
            let cts = self.last_committed.load(Ordering::Relaxed) + 1;
            writer.cts.store(cts, Ordering::Release);
            self.last_committed.store(cts, Ordering::SeqCst);
            cts
        };
        self.bytes.fetch_add(writer.bytes.load(Ordering::Relaxed), Ordering::Relaxed);
        self.committed.lock().push_back((cts, keys, writer));
        self.queued.fetch_add(1, Ordering::Relaxed);
    }

    /// The transaction of `view` rolled back (the tree holds the old values again):
    /// its versions go.
    pub(super) fn abort(&self, view: &ReadView, keys: &[(u64, Box<[u8]>)]) {
        let Some(writer) = view.writer.peek() else { return };
        // Between the tree's restore and the removal: a read that saw the rolled-back
        // value and misses the version sees this move.
        self.aborts.fetch_add(1, Ordering::SeqCst);
        let removed = self.remove(&writer, keys);
        assert_eq!(removed, keys.len(), "{}: {} versions removed of {} keys", view.txn, removed, keys.len());
    }

    /// Removes `writer`'s versions of `keys`; how many there were.
    fn remove(&self, writer: &Arc<Writer>, keys: &[(u64, Box<[u8]>)]) -> usize {
        let mut removed = 0;
        for (root, key) in keys {
            let h = key_hash(*root, key);
            let mut shard = self.shard(h).lock();
            let Some(bucket) = shard.get_mut(&h) else { continue };
            if let Some(c) = bucket.iter_mut().find(|c| c.root == *root && c.key == *key) {
                let before = c.versions.len();
                c.versions.retain(|v| !Arc::ptr_eq(&v.writer, writer));
                removed += before - c.versions.len();
            }
            bucket.retain(|c| !c.versions.is_empty());
            if bucket.is_empty() {
                shard.remove(&h);
            }
        }
        self.live.fetch_sub(removed, Ordering::SeqCst);
        removed
    }

    /// Collects the committed versions no running snapshot needs, then, while the
    /// bytes kept exceed the limit, ends the oldest snapshot and collects again.
    pub(super) fn collect(&self) {
        loop {
            let Some(horizon) = self.horizon() else { return };
            let mut queue = self.committed.lock();
            while queue.front().is_some_and(|(cts, ..)| *cts <= horizon) {
                let (_, keys, writer) = queue.pop_front().expect("front");
                self.queued.fetch_sub(1, Ordering::Relaxed);
                self.remove(&writer, &keys);
                self.bytes.fetch_sub(writer.bytes.load(Ordering::Relaxed), Ordering::Relaxed);
            }
            drop(queue);
            if self.bytes.load(Ordering::Relaxed) <= self.bytes_max || !self.end_oldest() {
                return;
            }
        }
    }

    /// The oldest snapshot running, or the last commit if none runs: versions
    /// committed at or before it are needed by nobody. `None` while a slot is being
    /// claimed (its snapshot unknown: nothing is collected).
    fn horizon(&self) -> Option<u64> {
        // The last commit first: a slot claimed after this reads it or a newer one.
        let newest = self.last_committed.load(Ordering::SeqCst);
        let mut h = newest;
        // Slots past the high-water mark were never claimed (it is raised before a
        // claim).
        for slot in &self.slots[..self.slots_used.load(Ordering::SeqCst)] {
            match slot.0.load(Ordering::SeqCst) {
                FREE | ENDED => {}
                CLAIMING => return None,
                s => h = h.min(s),
            }
        }
        if self.shared.load(Ordering::SeqCst) == 0 {
            return Some(h);
        }
        let reg = self.registry.lock();
        Some(reg.views.keys().next().map_or(h, |k| k.0.min(h)))
    }

    /// Ends the oldest snapshot older than the last commit (its reads fail from now
    /// on with `SnapshotTooOld`); false if there is none.
    fn end_oldest(&self) -> bool {
        let newest = self.last_committed.load(Ordering::SeqCst);
        let oldest_slot = self
            .slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| match s.0.load(Ordering::SeqCst) {
                FREE | ENDED | CLAIMING => None,
                v => Some((v, i)),
            })
            .min();
        let mut reg = self.registry.lock();
        let oldest_shared = reg.views.keys().next().copied();
        match (oldest_slot, oldest_shared) {
            (Some((s, i)), shared) if s < newest && shared.is_none_or(|k| s <= k.0) => {
                // Flagged before its versions go, so that a read that misses one sees
                // the flag; a slot released meanwhile stays free.
                let ended = self.slots[i].0.compare_exchange(s, ENDED, Ordering::SeqCst, Ordering::Relaxed).is_ok();
                if ended {
                    self.ended.fetch_add(1, Ordering::Relaxed);
                }
                true
            }
            (_, Some(k)) if k.0 < newest => {
                let flag = reg.views.remove(&k).expect("first");
                self.shared.fetch_sub(1, Ordering::SeqCst);
                flag.store(true, Ordering::SeqCst);
                self.ended.fetch_add(1, Ordering::Relaxed);
                true
            }
            _ => false,
        }
    }
}

/// A view's registration in the shared registry: unregistered when the view is dropped.
struct Registration {
    registry: Arc<Mutex<Registry>>,
    shared: Arc<AtomicUsize>,
    key: (u64, u64),
    ended: Arc<AtomicBool>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut reg = self.registry.lock();
        if reg.views.remove(&self.key).is_some() {
            self.shared.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// A view's writer state, made at its first write.
#[derive(Default)]
struct OnceWriter(std::sync::OnceLock<Arc<Writer>>);

impl OnceWriter {
    fn get(&self, txn: TxnId) -> Arc<Writer> {
        self.0.get_or_init(|| Arc::new(Writer { txn, cts: AtomicU64::new(RUNNING), bytes: AtomicU64::new(0) })).clone()
    }
    fn peek(&self) -> Option<Arc<Writer>> {
        self.0.get().cloned()
    }
}

/// What the version store holds (for reports and tests).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct MvccStats {
    /// Versions kept (running writers' and committed ones a snapshot may need).
    pub versions: u64,
    /// Bytes of committed versions kept for snapshots (the limit's measure).
    pub committed_bytes: u64,
    /// Registered snapshots (running transactions and `Db::range` iterators).
    pub snapshots: u64,
    /// Snapshots ended because the bytes kept reached the limit.
    pub snapshots_ended: u64,
    /// The newest commit timestamp.
    pub last_commit: u64,
}

/// What a reader sees: a snapshot (or the latest committed state) and the
/// transaction whose own changes it sees. A transaction's view is registered in a slot
/// until [`Mvcc::release`]; a `Db::range` iterator's in the shared registry until it is
/// dropped.
pub(super) struct ReadView {
    txn: TxnId,
    /// The last commit it sees ([`LATEST`]: the latest at each read).
    snapshot: u64,
    isolation: Isolation,
    reg: Reg,
    writer: OnceWriter,
}

/// Where a view is registered.
enum Reg {
    None,
    Slot(usize),
    Shared(Registration),
}

impl ReadView {
    /// The isolation it reads at.
    pub(super) fn isolation(&self) -> Isolation {
        self.isolation
    }

    /// The transaction whose changes it sees as its own ([`TxnId::NONE`]: none).
    pub(super) fn txn(&self) -> TxnId {
        self.txn
    }

    /// The snapshot a read taken now uses.
    pub(super) fn snapshot_now(&self, mvcc: &Mvcc) -> u64 {
        match self.snapshot {
            LATEST => mvcc.last_committed.load(Ordering::SeqCst),
            s => s,
        }
    }

    /// `SnapshotTooOld` if the limit ended the view's snapshot.
    pub(super) fn check(&self, mvcc: &Mvcc) -> Result<()> {
        let ended = match &self.reg {
            Reg::None => false,
            Reg::Slot(i) => mvcc.slots[*i].0.load(Ordering::SeqCst) == ENDED,
            Reg::Shared(r) => r.ended.load(Ordering::SeqCst),
        };
        if ended {
            return Err(DbError::SnapshotTooOld {
                txn: self.txn,
                bytes: mvcc.bytes.load(Ordering::Relaxed),
                limit: mvcc.bytes_max,
            }
            .into());
        }
        Ok(())
    }
}

impl Drop for ReadView {
    fn drop(&mut self) {
        // A slot not released stays taken and holds every later version back.
        if !std::thread::panicking() {
            assert!(!matches!(self.reg, Reg::Slot(_)), "{}: a view dropped without its slot released", self.txn);
        }
    }
}

impl std::fmt::Debug for ReadView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadView")
            .field("txn", &self.txn)
            .field("snapshot", &self.snapshot)
            .field("isolation", &self.isolation)
            .finish_non_exhaustive()
    }
}

/// A write of a key committed after the writer's snapshot (snapshot isolation).
pub(super) struct Conflict;

/// A batch of a range read: the entries read, in the order read (descending keys
/// for a reverse read), and the key range the read covered, `lo <= hi` in key order:
/// every key the tree held in it was read.
#[derive(Debug)]
pub(super) struct Batch {
    /// `(key, value)` in the order read.
    pub(super) entries: Vec<(Vec<u8>, Vec<u8>)>,
    /// The covered range's lower bound.
    pub(super) lo: Bound<Vec<u8>>,
    /// The covered range's upper bound.
    pub(super) hi: Bound<Vec<u8>>,
}
