//! A missing or blank file of an existing database (issue 18, items 2 and 4): each file
//! of a closed and of a crashed database (`std::mem::forget`: nothing more is written)
//! on `ssd-bm`, `three-tier` with an NVM log ring, `nvsql` and `nvm-direct` — page file
//! `data.db`, `data.db.dwa`, log segments, NVM pool, NVM double-write area, NVM log ring,
//! `nvm-direct` region, `CHECKPOINT` — is deleted, truncated to half or zeroed, one at a
//! time in a copy of the database, which is then opened and read. The open either fails
//! with an error that names the file (and leaves it as it found it: nothing made afresh
//! or formatted), or holds every committed key with its value: never an empty database,
//! never wrong data. Where the rule of `docs/wal.md` ("Creation") says which, the test
//! checks that too: a lost control file, page file, region or (after a crash) log ring
//! is an error; a lost cache pool, double-write area or (after a clean close) log ring
//! is rebuilt from the log and said so in the recovery report.

use std::collections::BTreeMap;
use std::path::Path;

mod files;
use files::{Damage, copy_dir, damage, files};
use std::time::Duration;

use tierdb::ByteSize;
use tierdb::buffer::Techniques;
use tierdb::db::{CheckpointConfig, Db, DbConfig, DbStore, RecoveryReport};
use tierdb::device::{DoubleWriteMode, DramConfig, NvmConfig, SsdConfig};
use tierdb::sources::DirectConfig;
use tierdb::wal::{Durability, LogBuffer};

const PS: usize = 4096;
/// Keys put before the checkpoint and after it (some of them again, with new values).
const KEYS: u32 = 500;
/// An NVM pool of 64 frames: far fewer than the tree's pages with DRAM's 12.
const POOL_BYTES: u64 = 64 * (PS as u64 + 64) + 16384;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Arch {
    /// DRAM log buffer, double-write file on SSD.
    SsdBm,
    /// `hymem` with every technique, an NVM pool and an NVM log ring.
    ThreeTier,
    /// A durable NVM cache, its double-write area in NVM, an NVM log ring.
    Nvsql,
    /// Pages in an NVM region, an NVM log ring.
    NvmDirect,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Closed,
    Crashed,
}

/// The database in `dir/db`, its NVM files in `dir`.
fn config(arch: Arch, dir: &Path) -> (DbConfig, Option<DirectConfig>) {
    let mut c = DbConfig::new(dir.join("db"));
    // No background checkpoints: a crashed (forgotten) database writes nothing more: its checkpointer would.
    c.checkpoint = CheckpointConfig::OFF;
    c.buffer.page_size = PS;
    c.buffer.dram = DramConfig::new(ByteSize(12 * PS as u64));
    c.durability = Durability::Sync;
    // Only commits and checkpoints flush: a crashed database's ring keeps its records,
    // and nothing writes the files of a forgotten database while they are copied.
    c.wal.flush_interval = Duration::from_secs(3600);
    if arch != Arch::SsdBm {
        c.wal.buffer = LogBuffer::Nvm(NvmConfig::new(dir.join("log.nvm"), ByteSize(1 << 20)));
    }
    let mut direct = None;
    match arch {
        Arch::SsdBm | Arch::NvmDirect => {}
        Arch::ThreeTier => {
            c.buffer.nvm = Some(NvmConfig::new(dir.join("pool.nvm"), ByteSize(POOL_BYTES)));
            c.buffer.techniques = Techniques::ALL;
            c.buffer.policy = "hymem".into();
        }
        Arch::Nvsql => {
            c.buffer.nvm = Some(NvmConfig::new(dir.join("pool.nvm"), ByteSize(POOL_BYTES)));
            c.buffer.policy = "nvsql".into();
            c.buffer.double_write = DoubleWriteMode::Nvm;
            let mut ssd = SsdConfig::new(dir.join("db").join("data.db"));
            ssd.page_size = PS;
            ssd.nvm_double_write.path = dir.join("dwa.nvm");
            c.buffer.ssd = Some(ssd);
        }
    }
    if arch == Arch::NvmDirect {
        direct = Some(DirectConfig::new(NvmConfig::new(dir.join("region.nvm"), ByteSize(256 * PS as u64)), PS));
    }
    (c, direct)
}

fn key(i: u32) -> Vec<u8> {
    format!("key{:08}", i * 7919 % 100_003).into_bytes()
}

fn value(i: u32, round: u8) -> Vec<u8> {
    let mut v = vec![round; 120];
    v[..4].copy_from_slice(&i.to_le_bytes());
    v
}

/// Commits before and after a checkpoint; returns what tree `t` must hold.
fn fill<S: DbStore>(db: &Db<S>) -> BTreeMap<Vec<u8>, Vec<u8>> {
    db.create_tree("t").unwrap();
    let mut model = BTreeMap::new();
    for i in 0..KEYS {
        db.put("t", &key(i), &value(i, 1)).unwrap();
        model.insert(key(i), value(i, 1));
    }
    db.checkpoint().unwrap();
    // After the checkpoint: in the log (and the ring, and NVM frames) only.
    for i in (0..KEYS).step_by(3) {
        db.put("t", &key(i), &value(i, 2)).unwrap();
        model.insert(key(i), value(i, 2));
    }
    for i in KEYS..KEYS + 40 {
        db.put("t", &key(i), &value(i, 3)).unwrap();
        model.insert(key(i), value(i, 3));
    }
    model
}

/// Tree `t`'s contents, and what recovery did.
type Read = (BTreeMap<Vec<u8>, Vec<u8>>, RecoveryReport);

fn read<S: DbStore>(db: &Db<S>) -> tierdb::Result<Read> {
    let mut got = BTreeMap::new();
    db.scan("t", b"", |k, v| {
        got.insert(k.to_vec(), v.to_vec());
        true
    })?;
    Ok((got, db.recovery().clone()))
}

/// Makes the database in `dir`, closed or crashed; returns what it must hold.
fn make(arch: Arch, dir: &Path, state: State) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let (c, direct) = config(arch, dir);
    let model;
    match direct {
        Some(d) => {
            let db = Db::open_nvm_direct(&c, &d).unwrap();
            model = fill(&db);
            match state {
                State::Closed => db.close().unwrap(),
                State::Crashed => std::mem::forget(db),
            }
        }
        None => {
            let db = Db::open(&c).unwrap();
            model = fill(&db);
            match state {
                State::Closed => db.close().unwrap(),
                State::Crashed => std::mem::forget(db),
            }
        }
    }
    model
}

/// Opens the database in `dir` and reads tree `t` (dropped without close: the check of
/// each case needs nothing more written).
fn open_and_read(arch: Arch, dir: &Path) -> tierdb::Result<Read> {
    let (c, direct) = config(arch, dir);
    match direct {
        Some(d) => Db::open_nvm_direct(&c, &d).and_then(|db| read(&db)),
        None => Db::open(&c).and_then(|db| read(&db)),
    }
}

/// What the rule says of a damaged file, where it says one thing.
#[derive(Debug)]
enum Expect {
    /// An error naming the file.
    Error,
    /// The committed data, and the recovery report says what was rebuilt.
    Rebuilt(fn(&RecoveryReport) -> bool),
    /// Either (the damage may hit bytes nothing needs, or the log's scan decides).
    Either,
}

fn expect(state: State, name: &str, d: Damage) -> Expect {
    use Damage::{Delete, TruncateHalf, Zero};
    match (name, d) {
        // The database's own files: never made afresh.
        ("CHECKPOINT", Delete) | ("data.db" | "region.nvm", _) => Expect::Error,
        (n, Delete) if n.ends_with(".wal") => Expect::Error,
        // Caches and copies the log can rebuild from.
        ("data.db.dwa", _) | ("dwa.nvm", Delete | Zero) => Expect::Rebuilt(|r| r.double_write_lost.is_some()),
        ("pool.nvm", Delete | Zero) => Expect::Rebuilt(|r| r.nvm_pool_formatted.is_some()),
        ("log.nvm", _) if state == State::Closed => Expect::Rebuilt(|r| r.log_ring_remade.is_some()),
        ("log.nvm", _) => Expect::Error,
        // A truncated NVM file (a size mismatch), a half control file (which may read
        // as an older format), a zeroed or truncated segment (the log's scan decides).
        (_, TruncateHalf | Zero) => Expect::Either,
        _ => Expect::Either,
    }
}

/// Damages each file of `arch`'s database in turn; returns a line per outcome that broke
/// the rule (none expected).
fn campaign(arch: Arch, state: State) -> Vec<String> {
    let shm = Path::new("/dev/shm");
    let base = if shm.is_dir() { tempfile::tempdir_in(shm).unwrap() } else { tempfile::tempdir().unwrap() };
    let pristine = base.path().join("pristine");
    let model = make(arch, &pristine, state);
    let mut broken = Vec::new();
    let mut cases = 0;
    for file in files(&pristine) {
        let rel = file.strip_prefix(&pristine).unwrap().to_path_buf();
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        for d in [Damage::Delete, Damage::TruncateHalf, Damage::Zero] {
            cases += 1;
            let dir = base.path().join(format!("case{cases}"));
            copy_dir(&pristine, &dir);
            let damaged = dir.join(&rel);
            damage(&damaged, d);
            let before = std::fs::read(&damaged).ok();
            let what = format!("{arch:?}, {state:?}, {} {d:?}", rel.display());
            let rule = expect(state, &name, d);
            // A deleted segment cannot be named: its directory and the LSN are.
            let names = |e: &str| {
                e.contains(&name)
                    || (name.ends_with(".wal") && e.contains(&damaged.parent().unwrap().display().to_string()))
            };
            match (open_and_read(arch, &dir), &rule) {
                (Ok((got, rep)), Expect::Rebuilt(said)) if got == model => {
                    if !said(&rep) {
                        broken.push(format!(
                            "{what}: the right data, but the report does not say what was rebuilt: {rep:?}"
                        ));
                    }
                }
                (Ok((got, _)), Expect::Either) if got == model => {}
                (Ok((got, _)), _) if got == model => {
                    broken.push(format!("{what}: opened with the right data, where the rule is {rule:?}"));
                }
                (Ok((got, rep)), _) => {
                    let wrong = model.iter().filter(|(k, v)| got.get(*k) != Some(*v)).count();
                    broken.push(format!(
                        "{what}: opened with {} keys, {wrong} of {} committed missing or wrong: {rep:?}",
                        got.len(),
                        model.len()
                    ));
                }
                (Err(e), Expect::Error | Expect::Either) if names(&e.to_string()) => {
                    if std::fs::read(&damaged).ok() != before {
                        broken.push(format!("{what}: the open failed ({e}), but changed the damaged file"));
                    }
                }
                (Err(e), Expect::Rebuilt(_)) => broken.push(format!("{what}: an error where the rule rebuilds: {e}")),
                (Err(e), _) => broken.push(format!("{what}: an error that does not name {name}: {e}")),
            }
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }
    assert!(cases >= 12, "{arch:?}: only {cases} cases");
    broken
}

fn check(arch: Arch) {
    let mut broken = campaign(arch, State::Closed);
    broken.extend(campaign(arch, State::Crashed));
    assert!(broken.is_empty(), "{} damaged database(s) broke the rule:\n{}", broken.len(), broken.join("\n"));
}

#[test]
fn a_missing_or_blank_file_of_an_ssd_bm_database_is_an_error_or_rebuilt() {
    check(Arch::SsdBm);
}

#[test]
fn a_missing_or_blank_file_of_a_three_tier_database_with_an_nvm_log_ring_is_an_error_or_rebuilt() {
    check(Arch::ThreeTier);
}

#[test]
fn a_missing_or_blank_file_of_an_nvsql_database_is_an_error_or_rebuilt() {
    check(Arch::Nvsql);
}

#[test]
fn a_missing_or_blank_file_of_an_nvm_direct_database_is_an_error_or_rebuilt() {
    check(Arch::NvmDirect);
}

/// A creation cut short after its control file was written, before its marker was
/// removed: the database exists (and the marker goes); no file is discarded.
#[test]
fn a_creation_marker_beside_the_control_file_keeps_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let model = make(Arch::SsdBm, dir.path(), State::Closed);
    let marker = dir.path().join("db").join("CREATING");
    std::fs::write(&marker, b"").unwrap();
    let (got, rep) = open_and_read(Arch::SsdBm, dir.path()).unwrap();
    assert!(got == model && rep.unfinished_creation.is_empty(), "{rep:?}");
    assert!(!marker.exists(), "the marker of a finished creation goes");
}

/// Without the control file, database files and no creation marker: an error naming the
/// control file, and nothing removed; with the marker (a creation cut short), the files
/// go and an empty database is made.
#[test]
fn a_lost_control_file_is_an_error_and_an_unfinished_creation_is_discarded() {
    let dir = tempfile::tempdir().unwrap();
    make(Arch::ThreeTier, dir.path(), State::Crashed);
    let db_dir = dir.path().join("db");
    std::fs::remove_file(db_dir.join("CHECKPOINT")).unwrap();
    let before = files(dir.path());
    let e = open_and_read(Arch::ThreeTier, dir.path()).unwrap_err();
    assert!(matches!(&e, tierdb::Error::Db(tierdb::db::DbError::FileLost { .. })), "{e}");
    assert!(e.to_string().contains("CHECKPOINT") && e.to_string().contains("data.db"), "{e}");
    assert_eq!(files(dir.path()), before, "nothing removed or made");
    // The marker says a creation was cut short: nothing in it was acknowledged.
    std::fs::write(db_dir.join("CREATING"), b"").unwrap();
    let (c, _) = config(Arch::ThreeTier, dir.path());
    let db = Db::open(&c).unwrap();
    assert!(db.tree_names().is_empty(), "created afresh");
    assert!(db.recovery().unfinished_creation.iter().any(|f| f.ends_with("data.db")), "{:?}", db.recovery());
    assert!(!db_dir.join("CREATING").exists(), "the creation finished");
    db.close().unwrap();
}
