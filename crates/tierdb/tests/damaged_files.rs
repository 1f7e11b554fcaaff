//! Every file of a database damaged at rest (issue 18): each file of a closed and of a
//! crashed database — page file, its double-write file, log segments, NVM pool, NVM log
//! ring, `nvm-direct` region, NVM double-write area, control file — is deleted,
//! truncated, zeroed, or has bytes flipped, one damage at a time, and the database is
//! opened and read. Each open either fails with an error that names the damaged file,
//! or holds exactly the committed data (the damage hit bytes nothing needs): never
//! wrong data, never an empty database.

use std::collections::BTreeMap;
use std::path::Path;

mod files;
use files::{Damage, copy_dir, damage, files};

use tierdb::ByteSize;
use tierdb::buffer::Techniques;
use tierdb::db::{CheckpointConfig, Db, DbConfig, DbStore};
use tierdb::device::{DoubleWriteMode, DramConfig, NvmConfig, SsdConfig};
use tierdb::sources::DirectConfig;
use tierdb::wal::{Durability, LogBuffer};

const PS: usize = 4096;
const KEYS: u32 = 400;
/// Flipped bytes per file, each in its own copy of the database.
const FLIPS_PER_FILE: u64 = 24;
/// Half the flips land in a file's first bytes, where the data of small pools and regions
/// lies (frames are handed out from the start).
const FLIP_HEAD_BYTES: u64 = 128 * 1024;

#[derive(Clone, Copy, Debug)]
enum Arch {
    SsdBm,
    /// `ssd-bm` with the log buffer in DRAM: the log is only in its segment files.
    SsdBmDramLog,
    ThreeTier,
    Nvsql,
    NvmDirect,
}

fn config(arch: Arch, dir: &Path) -> (DbConfig, Option<DirectConfig>) {
    let mut c = DbConfig::new(dir.join("db"));
    // No background checkpoints: a crashed (forgotten) database writes nothing more: its checkpointer would.
    c.checkpoint = CheckpointConfig::OFF;
    c.buffer.page_size = PS;
    c.buffer.dram = DramConfig::new(ByteSize(16 * PS as u64));
    c.durability = Durability::Sync;
    c.wal.buffer = LogBuffer::Nvm(NvmConfig::new(dir.join("log.nvm"), ByteSize(1 << 20)));
    let mut direct = None;
    match arch {
        Arch::SsdBm => {}
        Arch::SsdBmDramLog => c.wal.buffer = LogBuffer::Dram,
        Arch::ThreeTier => {
            // Fewer DRAM frames than the tree has pages: most live in NVM only.
            c.buffer.dram = DramConfig::new(ByteSize(8 * PS as u64));
            c.buffer.nvm = Some(NvmConfig::new(dir.join("pool.nvm"), ByteSize(64 * (PS as u64 + 64) + 16384)));
            c.buffer.techniques = Techniques::ALL;
            c.buffer.policy = "hymem".into();
        }
        Arch::Nvsql => {
            c.buffer.nvm = Some(NvmConfig::new(dir.join("pool.nvm"), ByteSize(64 * (PS as u64 + 64) + 16384)));
            c.buffer.policy = "nvsql".into();
            c.buffer.double_write = DoubleWriteMode::Nvm;
            let mut ssd = SsdConfig::new(dir.join("db").join("data.db"));
            ssd.page_size = PS;
            ssd.nvm_double_write.path = dir.join("pool.nvm.dwa");
            c.buffer.ssd = Some(ssd);
        }
        Arch::NvmDirect => {
            direct = Some(DirectConfig::new(NvmConfig::new(dir.join("data.nvm"), ByteSize(512 * PS as u64)), PS));
        }
    }
    (c, direct)
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

fn value(i: u32) -> Vec<u8> {
    let mut v = vec![(i % 251) as u8; 100];
    v[..4].copy_from_slice(&i.to_le_bytes());
    v
}

fn fill<S: DbStore>(db: &Db<S>) -> BTreeMap<Vec<u8>, Vec<u8>> {
    db.create_tree("t").unwrap();
    let mut model = BTreeMap::new();
    for i in 0..KEYS {
        // Scattered, so that many pages change between checkpoints.
        let k = (i * 7919) % KEYS;
        db.put("t", &key(k), &value(k)).unwrap();
        model.insert(key(k), value(k));
        if i == KEYS / 2 {
            db.checkpoint().unwrap();
        }
    }
    model
}

fn read<S: DbStore>(db: &Db<S>) -> tierdb::Result<BTreeMap<Vec<u8>, Vec<u8>>> {
    let mut got = BTreeMap::new();
    db.scan("t", b"", |k, v| {
        got.insert(k.to_vec(), v.to_vec());
        true
    })?;
    Ok(got)
}

/// Makes the database in `dir`: closed cleanly, or abandoned as a kill leaves it.
fn make(arch: Arch, dir: &Path, crashed: bool) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let (c, direct) = config(arch, dir);
    match direct {
        Some(d) => {
            let db = Db::open_nvm_direct(&c, &d).unwrap();
            let model = fill(&db);
            if crashed {
                std::mem::forget(db)
            } else {
                db.close().unwrap()
            }
            model
        }
        None => {
            let db = Db::open(&c).unwrap();
            let model = fill(&db);
            if crashed {
                std::mem::forget(db)
            } else {
                db.close().unwrap()
            }
            model
        }
    }
}

/// Opens the database in `dir` and reads tree `t`: its contents, or the error's text.
fn open_and_read(arch: Arch, dir: &Path) -> Result<BTreeMap<Vec<u8>, Vec<u8>>, String> {
    let (c, direct) = config(arch, dir);
    let got = match direct {
        Some(d) => Db::open_nvm_direct(&c, &d).and_then(|db| read(&db)),
        None => Db::open(&c).and_then(|db| read(&db)),
    };
    got.map_err(|e| e.to_string())
}

/// Offsets to flip in a file of `len` bytes: its first bytes (headers), then by a fixed
/// seed, half in its head and half anywhere.
fn flips(len: u64, salt: u64) -> Vec<u64> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ salt;
    let mut at = vec![0, 9, 70];
    while (at.len() as u64) < FLIPS_PER_FILE {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let span = if at.len() % 2 == 0 { len.min(FLIP_HEAD_BYTES) } else { len };
        at.push(x % span.max(1));
    }
    at
}

/// Damages each file of `arch`'s database in turn and checks every outcome; returns a
/// line per outcome that broke the rule (none expected).
fn campaign(arch: Arch, crashed: bool) -> Vec<String> {
    let base = tempfile::tempdir_in("/dev/shm").unwrap();
    let pristine = base.path().join("pristine");
    let model = make(arch, &pristine, crashed);
    let mut broken = Vec::new();
    let mut cases = 0;
    for file in files(&pristine) {
        let rel = file.strip_prefix(&pristine).unwrap().to_path_buf();
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        let len = std::fs::metadata(&file).unwrap().len();
        let mut damages = vec![Damage::Delete, Damage::TruncateHalf, Damage::Zero];
        damages.extend(flips(len, cases as u64).into_iter().map(Damage::Flip));
        for d in damages {
            cases += 1;
            let dir = base.path().join(format!("case{cases}"));
            copy_dir(&pristine, &dir);
            damage(&dir.join(&rel), d);
            let what = format!("{arch:?}, {}, {} {d:?}", if crashed { "crashed" } else { "closed" }, rel.display());
            match open_and_read(arch, &dir) {
                Ok(got) if got == model => {}
                Ok(got) => {
                    let wrong = model.iter().filter(|(k, v)| got.get(*k) != Some(*v)).count();
                    let extra = got.keys().filter(|k| !model.contains_key(*k)).count();
                    broken.push(format!(
                        "{what}: opened with {} keys ({wrong} of {} committed missing or wrong, {extra} never written)",
                        got.len(),
                        model.len()
                    ));
                }
                Err(e) if e.contains(&name) => {}
                // A file that is gone: its directory is what can be named (a lost log
                // segment's name is not known, only the LSN the log lacks).
                Err(e)
                    if matches!(d, Damage::Delete)
                        && e.contains(&dir.join(&rel).parent().unwrap().display().to_string()) => {}
                Err(e) => broken.push(format!("{what}: an error that does not name {name}: {e}")),
            }
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }
    assert!(cases > 20, "{arch:?}: only {cases} cases");
    broken
}

fn check(arch: Arch) {
    let mut broken = campaign(arch, false);
    broken.extend(campaign(arch, true));
    assert!(broken.is_empty(), "{} damaged database(s) broke the rule:\n{}", broken.len(), broken.join("\n"));
}

#[test]
fn every_damaged_file_of_an_ssd_bm_database_is_an_error_or_harmless() {
    check(Arch::SsdBm);
}

#[test]
fn every_damaged_file_of_an_ssd_bm_database_with_a_dram_log_buffer_is_an_error_or_harmless() {
    check(Arch::SsdBmDramLog);
}

#[test]
fn every_damaged_file_of_a_three_tier_database_is_an_error_or_harmless() {
    check(Arch::ThreeTier);
}

#[test]
fn every_damaged_file_of_an_nvsql_database_is_an_error_or_harmless() {
    check(Arch::Nvsql);
}

#[test]
fn every_damaged_file_of_an_nvm_direct_database_is_an_error_or_harmless() {
    check(Arch::NvmDirect);
}
