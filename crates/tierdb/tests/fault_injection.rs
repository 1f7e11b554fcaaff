//! Injected device faults: a failing sync, a full device, a torn write, a power loss
//! that drops unsynced writes. The log and the page file report typed errors, refuse
//! further work once poisoned, and the log recovers to its last valid record.

use std::path::Path;
use std::time::Duration;

use tierdb::device::{DeviceError, FaultError, FaultPlan, SsdConfig, SsdFile, page_seal};
use tierdb::ids::PageId;
use tierdb::wal::{Durability, Kind, Lsn, RecordHead, Wal, WalConfig, WalError};

fn wal_config(dir: &Path, plan: Option<&std::sync::Arc<FaultPlan>>) -> WalConfig {
    let mut c = WalConfig::new(dir.join("wal"));
    c.flush_interval = Duration::from_secs(3600); // only explicit flushes write
    c.file.faults = plan.cloned();
    c
}

fn append(wal: &Wal, from: u64, to: u64) {
    for i in from..to {
        wal.append(&RecordHead::new(Kind::Update, 1, Lsn::NONE).page(i), &[i as u8; 300]).unwrap();
    }
}

fn records(dir: &Path) -> (u64, Option<String>) {
    let wal = Wal::open(&wal_config(dir, None)).unwrap();
    let r = wal.recovered().clone();
    for (i, rec) in wal.records_from(wal.start_lsn()).enumerate() {
        let rec = rec.unwrap();
        assert_eq!((rec.head.page, rec.payload[0]), (i as u64, i as u8), "record {i}");
    }
    (r.records, r.tail)
}

#[test]
fn a_failed_sync_poisons_the_log_and_a_power_loss_drops_the_unsynced_records() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = FaultPlan::new();
    let wal = Wal::open(&wal_config(tmp.path(), Some(&plan))).unwrap();
    append(&wal, 0, 10);
    wal.commit(wal.next_lsn(), Durability::Sync).unwrap();
    plan.fail_nth_sync(1);
    append(&wal, 10, 15);
    let e = wal.commit(wal.next_lsn(), Durability::Sync).unwrap_err();
    assert!(matches!(e, WalError::Device(DeviceError::Io { .. })), "{e}");
    let e = wal.append(&RecordHead::new(Kind::Commit, 1, Lsn::NONE), &[]).unwrap_err();
    assert!(matches!(e, WalError::Poisoned { .. }), "{e}");
    drop(wal);
    assert!(plan.lose_unsynced().unwrap() >= 1);
    assert_eq!(records(tmp.path()), (10, None), "exactly the synced records survive");
}

#[test]
fn a_full_device_is_reported_as_full() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = FaultPlan::new();
    let wal = Wal::open(&wal_config(tmp.path(), Some(&plan))).unwrap();
    append(&wal, 0, 10);
    wal.flush_until(wal.next_lsn()).unwrap();
    plan.fail_nth_write(1, FaultError::NoSpace);
    append(&wal, 10, 20);
    let e = wal.flush_until(wal.next_lsn()).unwrap_err();
    assert!(matches!(e, WalError::Device(DeviceError::Full { .. })), "{e}");
    assert!(e.to_string().contains("no space left"), "{e}");
    drop(wal);
    assert_eq!(records(tmp.path()), (10, None));
}

#[test]
fn a_torn_log_write_is_cut_at_the_last_whole_record() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = FaultPlan::new();
    let wal = Wal::open(&wal_config(tmp.path(), Some(&plan))).unwrap();
    append(&wal, 0, 10);
    wal.flush_until(wal.next_lsn()).unwrap();
    plan.tear_nth_write(1);
    append(&wal, 10, 40);
    assert!(wal.flush_until(wal.next_lsn()).is_err());
    drop(wal);
    // The torn half stays on disk (no power loss): recovery keeps the whole records in
    // it and cuts the rest.
    let (n, tail) = records(tmp.path());
    assert!((10..40).contains(&n), "{n} records");
    assert!(tail.as_deref().is_some_and(|t| t.contains("cut")), "{tail:?}");
    let (again, tail) = records(tmp.path());
    assert_eq!((again, tail), (n, None), "the cut is durable");
}

#[test]
fn the_page_file_reports_failed_and_full_writes_and_stays_poisoned() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = FaultPlan::new();
    let mut cfg = SsdConfig::new(tmp.path().join("t.db"));
    cfg.page_size = 4096;
    cfg.faults = Some(plan.clone());
    let ssd = SsdFile::create(&cfg).unwrap();
    ssd.grow(4).unwrap();
    let mut page = vec![7u8; 4096];
    page_seal::clear(&mut page); // bytes 48..64 belong to the page seal
    ssd.write_page(PageId(1), &page).unwrap();
    plan.fail_nth_write(1, FaultError::NoSpace);
    assert!(matches!(ssd.write_page(PageId(2), &page), Err(DeviceError::Full { .. })));
    assert!(matches!(ssd.write_page(PageId(3), &page), Err(DeviceError::Poisoned { .. })));
    drop(ssd);
    // Reopened, the page written before the fault reads back.
    cfg.faults = None;
    let ssd = SsdFile::open(&cfg).unwrap();
    let mut buf = vec![0u8; 4096];
    ssd.read_page(PageId(1), &mut buf).unwrap();
    assert_eq!(buf, page);
}
