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
    registry: Arc<Mutex<Registry>>,
    /// Committed writers whose versions are kept, in commit order, with their keys.
    committed: Mutex<VecDeque<Committed>>,
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
            registry: Arc::new(Mutex::new(Registry::default())),
            committed: Mutex::new(VecDeque::new()),
            bytes: AtomicU64::new(0),
            ended: AtomicU64::new(0),
            latest: ReadView {
                inner: Arc::new(ViewInner {
                    txn: TxnId::NONE,
                    snapshot: LATEST,
                    isolation,
                    registration: None,
                    writer: OnceWriter::default(),
                }),
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
        !self.committed.lock().is_empty()
    }

    /// What the store holds now.
    pub(super) fn stats(&self) -> MvccStats {
        MvccStats {
            versions: self.live.load(Ordering::Relaxed) as u64,
            committed_bytes: self.bytes.load(Ordering::Relaxed),
            snapshots: self.registry.lock().views.len() as u64,
            snapshots_ended: self.ended.load(Ordering::Relaxed),
            last_commit: self.last_committed.load(Ordering::Relaxed),
        }
    }

    /// The view of a transaction `txn` starting now: registered (snapshot isolation
    /// and read committed: collection keeps what it may read) until the last clone of
    /// the view is dropped.
    pub(super) fn begin_view(&self, txn: TxnId) -> ReadView {
        match self.isolation {
            Isolation::ReadUncommitted => self.unregistered(txn, LATEST),
            // Read committed reads the latest commit at each read, registered at its
            // start: a newer snapshot needs no more than the registered one keeps.
            Isolation::Snapshot => self.registered(txn, false),
            Isolation::ReadCommitted => self.registered(txn, true),
        }
    }

    /// The view of a non-transactional reader that lasts (an iterator of `Db::range`):
    /// a registered snapshot of the latest commit, without a transaction.
    pub(super) fn snapshot_view(&self) -> ReadView {
        match self.isolation {
            Isolation::ReadUncommitted => self.unregistered(TxnId::NONE, LATEST),
            _ => self.registered(TxnId::NONE, false),
        }
    }

    /// The view of a non-transactional point read: the latest committed state.
    pub(super) fn latest_view(&self) -> &ReadView {
        &self.latest
    }

    /// What an ended transaction keeps in place of its view: nothing registered.
    pub(super) fn ended_view(&self) -> ReadView {
        self.latest.clone()
    }

    fn unregistered(&self, txn: TxnId, snapshot: u64) -> ReadView {
        ReadView {
            inner: Arc::new(ViewInner {
                txn,
                snapshot,
                isolation: self.isolation,
                registration: None,
                writer: OnceWriter::default(),
            }),
        }
    }

    /// A registered view: of the snapshot taken now, or (`per_read`) of the latest
    /// commit at each read, with the registration of now keeping what it may read.
    fn registered(&self, txn: TxnId, per_read: bool) -> ReadView {
        let flag = Arc::new(AtomicBool::new(false));
        let (snapshot, id) = {
            let mut reg = self.registry.lock();
            // Under the registry's mutex: a collection that reads the registry after
            // this sees the snapshot; one before it kept everything newer than the
            // commit published then, which is not newer than this snapshot.
            let snapshot = self.last_committed.load(Ordering::SeqCst);
            let id = reg.next_id;
            reg.next_id += 1;
            reg.views.insert((snapshot, id), flag.clone());
            (snapshot, id)
        };
        let reads_at = if per_read { LATEST } else { snapshot };
        ReadView {
            inner: Arc::new(ViewInner {
                txn,
                snapshot: reads_at,
                isolation: self.isolation,
                registration: Some(Registration { registry: self.registry.clone(), key: (snapshot, id), ended: flag }),
                writer: OnceWriter::default(),
            }),
        }
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
            let visible =
                if cts == RUNNING { v.writer.txn == view.inner.txn && !view.inner.txn.is_none() } else { cts <= s };
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
        let writer = view.inner.writer.get(view.inner.txn);
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
        if view.inner.isolation == Isolation::Snapshot {
            let s = view.inner.snapshot;
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
            view.inner.txn
        );
        // Counted before the tree changes (SeqCst: a read that sees the change sees
        // the count).
        self.live.fetch_add(1, Ordering::SeqCst);
        chain.versions.push(Version { writer, before: before.map(Vec::into_boxed_slice) });
        Ok(())
    }

    /// `key` was committed after the snapshot of `view`: the check of `record` alone.
    pub(super) fn conflicts(&self, view: &ReadView, root: u64, key: &[u8]) -> bool {
        if view.inner.isolation != Isolation::Snapshot {
            return false;
        }
        let h = key_hash(root, key);
        let shard = self.shard(h).lock();
        shard.get(&h).and_then(|b| b.iter().find(|c| c.root == root && *c.key == *key)).is_some_and(|c| {
            c.versions.iter().any(|v| {
                let cts = v.writer.cts.load(Ordering::Acquire);
                cts != RUNNING && cts > view.inner.snapshot
            })
        })
    }

    /// The transaction of `view` committed (its records durable): its versions get the
    /// next commit timestamp, published in order; they are kept for older snapshots
    /// and collected when none needs them.
    pub(super) fn commit(&self, view: &ReadView, keys: WrittenKeys) {
        let Some(writer) = view.inner.writer.peek() else {
            assert!(keys.is_empty(), "{}: {} versioned keys and no writer", view.inner.txn, keys.len());
            return;
        };
        let cts = {
            let _clock = self.clock.lock();
            let cts = self.last_committed.load(Ordering::Relaxed) + 1;
            writer.cts.store(cts, Ordering::Release);
            self.last_committed.store(cts, Ordering::SeqCst);
            cts
        };
        let bytes: u64 = keys.iter().map(|(_, k)| k.len() as u64 + VERSION_OVERHEAD_BYTES).sum::<u64>()
            + self.before_bytes(&writer, &keys);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        self.committed.lock().push_back((cts, keys, writer));
    }

    /// Bytes of `writer`'s before-images of `keys`.
    fn before_bytes(&self, writer: &Arc<Writer>, keys: &[(u64, Box<[u8]>)]) -> u64 {
        let mut n = 0;
        for (root, key) in keys {
            let h = key_hash(*root, key);
            let shard = self.shard(h).lock();
            if let Some(c) = shard.get(&h).and_then(|b| b.iter().find(|c| c.root == *root && c.key == *key)) {
                n += c
                    .versions
                    .iter()
                    .filter(|v| Arc::ptr_eq(&v.writer, writer))
                    .map(|v| v.before.as_ref().map_or(0, |b| b.len() as u64))
                    .sum::<u64>();
            }
        }
        n
    }

    /// The transaction of `view` rolled back (the tree holds the old values again):
    /// its versions go.
    pub(super) fn abort(&self, view: &ReadView, keys: &[(u64, Box<[u8]>)]) {
        let Some(writer) = view.inner.writer.peek() else { return };
        // Between the tree's restore and the removal: a read that saw the rolled-back
        // value and misses the version sees this move.
        self.aborts.fetch_add(1, Ordering::SeqCst);
        let removed = self.remove(&writer, keys);
        assert_eq!(removed, keys.len(), "{}: {} versions removed of {} keys", view.inner.txn, removed, keys.len());
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
            let horizon = {
                let reg = self.registry.lock();
                let newest = self.last_committed.load(Ordering::SeqCst);
                reg.views.keys().next().map_or(newest, |k| k.0.min(newest))
            };
            let mut queue = self.committed.lock();
            while queue.front().is_some_and(|(cts, ..)| *cts <= horizon) {
                let (_, keys, writer) = queue.pop_front().expect("front");
                let freed: u64 = keys.iter().map(|(_, k)| k.len() as u64 + VERSION_OVERHEAD_BYTES).sum::<u64>()
                    + self.before_bytes(&writer, &keys);
                self.remove(&writer, &keys);
                self.bytes.fetch_sub(freed, Ordering::Relaxed);
            }
            drop(queue);
            let bytes = self.bytes.load(Ordering::Relaxed);
            if bytes <= self.bytes_max {
                return;
            }
            // End the oldest snapshot: flagged before its versions go, so that a read
            // that misses one sees the flag.
            let mut reg = self.registry.lock();
            let Some((&k, _)) = reg.views.iter().next() else { return };
            if k.0 >= self.last_committed.load(Ordering::SeqCst) {
                return; // no snapshot holds anything back
            }
            let flag = reg.views.remove(&k).expect("first");
            flag.store(true, Ordering::SeqCst);
            self.ended.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A view's registration: unregistered when the view's last clone is dropped.
struct Registration {
    registry: Arc<Mutex<Registry>>,
    key: (u64, u64),
    ended: Arc<AtomicBool>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.registry.lock().views.remove(&self.key);
    }
}

/// A view's writer state, made at its first write.
#[derive(Default)]
struct OnceWriter(std::sync::OnceLock<Arc<Writer>>);

impl OnceWriter {
    fn get(&self, txn: TxnId) -> Arc<Writer> {
        self.0.get_or_init(|| Arc::new(Writer { txn, cts: AtomicU64::new(RUNNING) })).clone()
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
/// transaction whose own changes it sees. Cheap to clone; the snapshot stays
/// registered while a clone lives.
#[derive(Clone)]
pub(super) struct ReadView {
    inner: Arc<ViewInner>,
}

struct ViewInner {
    txn: TxnId,
    /// The last commit it sees ([`LATEST`]: the latest at each read).
    snapshot: u64,
    isolation: Isolation,
    registration: Option<Registration>,
    writer: OnceWriter,
}

impl ReadView {
    /// The isolation it reads at.
    pub(super) fn isolation(&self) -> Isolation {
        self.inner.isolation
    }

    /// The transaction whose changes it sees as its own ([`TxnId::NONE`]: none).
    pub(super) fn txn(&self) -> TxnId {
        self.inner.txn
    }

    /// The snapshot a read taken now uses.
    pub(super) fn snapshot_now(&self, mvcc: &Mvcc) -> u64 {
        match self.inner.snapshot {
            LATEST => mvcc.last_committed.load(Ordering::SeqCst),
            s => s,
        }
    }

    /// `SnapshotTooOld` if the limit ended the view's snapshot.
    pub(super) fn check(&self, mvcc: &Mvcc) -> Result<()> {
        match &self.inner.registration {
            Some(r) if r.ended.load(Ordering::SeqCst) => Err(DbError::SnapshotTooOld {
                txn: self.inner.txn,
                bytes: mvcc.bytes.load(Ordering::Relaxed),
                limit: mvcc.bytes_max,
            }
            .into()),
            _ => Ok(()),
        }
    }
}

impl std::fmt::Debug for ReadView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadView")
            .field("txn", &self.inner.txn)
            .field("snapshot", &self.inner.snapshot)
            .field("isolation", &self.inner.isolation)
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
