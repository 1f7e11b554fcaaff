//! The analysis on histories made by hand: a clean one that every level passes, and
//! one per anomaly that the analysis must find (and count as forbidden exactly at the
//! levels that forbid it).
//!
//! The clean history: registers `r0`, `r1` and accounts `a0`, `a1` (loaded as versions
//! 0.0 … 0.3, balances 1000). Times are nanoseconds.
//! - 1: begins [10, 11], reads r0 = 0.0, writes r0 = 1.1, commits [20, 21];
//! - 4: begins [5, 6], reads r0 = 0.0 at [16, 17] (1 has not committed), commits;
//! - 2: begins [30, 31], reads r0 = 1.1 and r1 = 0.1, writes r1 = 2.3, commits [40, 41];
//! - 3: begins [50, 51], reads r1 = 2.3, writes r1 = 3.1, rolls back [60, 61];
//! - 5: a transfer of 10 from a0 to a1 (versions 5.2, 5.3), commits [80, 81];
//! - 6: an audit begins [90, 91], reads 990 + 1010.

use super::*;

const KEYS: [&str; 4] = ["r0", "r1", "a0", "a1"];

fn v(txn: u64, op: u32) -> VersionId {
    VersionId { txn, op }
}

/// The index of `key` in [`KEYS`].
fn k(key: &str) -> u32 {
    KEYS.iter().position(|&n| n == key).expect("a key of KEYS") as u32
}

fn read(key: &str, version: VersionId, balance: i64, (start_ns, end_ns): (u64, u64)) -> Op {
    let seen = Seen::Version { version, balance };
    Op { kind: OpKind::Read { key: k(key), seen }, start_ns, end_ns, ok: true }
}

fn read_seen(key: &str, seen: Seen, (start_ns, end_ns): (u64, u64)) -> Op {
    Op { kind: OpKind::Read { key: k(key), seen }, start_ns, end_ns, ok: true }
}

fn write(key: &str, version: VersionId, prev: VersionId, balance: i64, (start_ns, end_ns): (u64, u64)) -> Op {
    Op { kind: OpKind::Write { key: k(key), version, prev: Some(prev), balance }, start_ns, end_ns, ok: true }
}

fn committed(call_ns: u64, return_ns: u64) -> End {
    End::Committed { call_ns, return_ns }
}

fn aborted(call_ns: u64, return_ns: u64) -> End {
    End::Aborted { cause: AbortCause::Voluntary, call_ns, return_ns }
}

fn txn(id: u64, kind: TxnKind, (begin_ns, begun_ns): (u64, u64), ops: Vec<Op>, end: End) -> TxnRecord {
    TxnRecord { id, thread: 0, kind, begin_ns, begun_ns, ops, end }
}

fn reg(id: u64, begin: (u64, u64), ops: Vec<Op>, end: End) -> TxnRecord {
    txn(id, TxnKind::Register, begin, ops, end)
}

fn clean() -> History {
    let txns = vec![
        reg(
            1,
            (10, 11),
            vec![read("r0", v(0, 0), 0, (12, 13)), write("r0", v(1, 1), v(0, 0), 0, (14, 15))],
            committed(20, 21),
        ),
        reg(4, (5, 6), vec![read("r0", v(0, 0), 0, (16, 17))], committed(18, 19)),
        reg(
            2,
            (30, 31),
            vec![
                read("r0", v(1, 1), 0, (32, 33)),
                read("r1", v(0, 1), 0, (34, 35)),
                write("r1", v(2, 2), v(0, 1), 0, (36, 37)),
            ],
            committed(40, 41),
        ),
        reg(
            3,
            (50, 51),
            vec![read("r1", v(2, 2), 0, (52, 53)), write("r1", v(3, 1), v(2, 2), 0, (54, 55))],
            aborted(60, 61),
        ),
        txn(
            5,
            TxnKind::Transfer,
            (70, 71),
            vec![
                read("a0", v(0, 2), 1000, (72, 73)),
                read("a1", v(0, 3), 1000, (72, 73)),
                write("a0", v(5, 2), v(0, 2), 990, (74, 75)),
                write("a1", v(5, 3), v(0, 3), 1010, (76, 77)),
            ],
            committed(80, 81),
        ),
        txn(
            6,
            TxnKind::Audit,
            (90, 91),
            vec![read("a0", v(5, 2), 990, (92, 93)), read("a1", v(5, 3), 1010, (94, 95))],
            committed(96, 97),
        ),
    ];
    let final_state = vec![
        ("r0".into(), Seen::Version { version: v(1, 1), balance: 0 }),
        ("r1".into(), Seen::Version { version: v(2, 2), balance: 0 }),
        ("a0".into(), Seen::Version { version: v(5, 2), balance: 990 }),
        ("a1".into(), Seen::Version { version: v(5, 3), balance: 1010 }),
    ];
    History { keys: KEYS.map(String::from).to_vec(), accounts: 2, balance_initial: 1000, txns, final_state }
}

/// `h` with `extra` transactions added.
fn with(extra: Vec<TxnRecord>) -> History {
    let mut h = clean();
    h.txns.extend(extra);
    h
}

/// The kinds found in `h` (judged at snapshot isolation, where all are forbidden).
fn kinds(h: &History) -> Vec<(AnomalyKind, u64)> {
    let a = analyse(h, Isolation::Snapshot);
    assert_eq!(a.forbidden_found, a.anomalies.iter().map(|c| c.count).sum::<u64>(), "{a:#?}");
    a.anomalies.iter().filter(|c| c.count > 0).map(|c| (c.kind, c.count)).collect()
}

fn forbidden(h: &History, level: Isolation) -> u64 {
    analyse(h, level).forbidden_found
}

#[test]
fn a_clean_history_passes_at_every_level() {
    let h = clean();
    assert_eq!(kinds(&h), []);
    for level in [Isolation::Snapshot, Isolation::ReadCommitted, Isolation::ReadUncommitted] {
        let a = analyse(&h, level);
        assert_eq!(a.forbidden_found, 0, "{level}: {a:#?}");
        assert_eq!(a.anomalies.len(), AnomalyKind::ALL.len());
    }
}

#[test]
fn a_read_of_an_aborted_write_is_a_dirty_read() {
    // 7 reads 3.1, which 3 rolled back.
    let h = with(vec![reg(7, (52, 53), vec![read("r1", v(3, 1), 0, (56, 57))], committed(58, 59))]);
    assert_eq!(kinds(&h), [(AnomalyKind::DirtyRead, 1)]);
    let a = analyse(&h, Isolation::Snapshot);
    let ex = &a.anomalies[0].examples[0];
    assert_eq!(ex.txns, [7, 3]);
    assert!(ex.what.contains("aborted"), "{}", ex.what);
    assert_eq!(forbidden(&h, Isolation::ReadCommitted), 1);
    assert_eq!(forbidden(&h, Isolation::ReadUncommitted), 0, "read uncommitted allows it");
}

#[test]
fn a_read_before_the_writer_commits_is_a_dirty_read() {
    // 8 reads 1.1 at [16, 17]; 1 calls commit at 20.
    let h = with(vec![reg(8, (12, 13), vec![read("r0", v(1, 1), 0, (16, 17))], committed(18, 19))]);
    assert_eq!(kinds(&h), [(AnomalyKind::DirtyRead, 1)]);
    assert_eq!(forbidden(&h, Isolation::ReadCommitted), 1);
}

#[test]
fn a_read_of_an_overwritten_intermediate_value_is_a_dirty_read() {
    // 9 writes r0 twice (9.1, then 9.2) and commits; 10 read 9.1 after the commit.
    let h = with(vec![
        reg(
            9,
            (100, 101),
            vec![write("r0", v(9, 1), v(1, 1), 0, (102, 103)), write("r0", v(9, 2), v(9, 1), 0, (104, 105))],
            committed(106, 107),
        ),
        reg(10, (110, 111), vec![read("r0", v(9, 1), 0, (112, 113))], committed(114, 115)),
    ]);
    let found = kinds(&h);
    assert!(found.contains(&(AnomalyKind::DirtyRead, 1)), "{found:?}");
    assert!(analyse(&h, Isolation::Snapshot).anomalies[0].examples[0].what.contains("overwrote"));
}

#[test]
fn overlapping_writes_of_a_key_are_a_dirty_write_at_every_level() {
    // 11 writes a0 while 12's write of it is uncommitted (12 ends at 120).
    let h = with(vec![
        reg(12, (100, 101), vec![write("r0", v(12, 1), v(1, 1), 0, (102, 103))], committed(120, 121)),
        reg(11, (104, 105), vec![write("r0", v(11, 1), v(1, 1), 0, (106, 107))], aborted(108, 109)),
    ]);
    let found = kinds(&h);
    assert!(found.contains(&(AnomalyKind::DirtyWrite, 1)), "{found:?}");
    for level in [Isolation::Snapshot, Isolation::ReadCommitted, Isolation::ReadUncommitted] {
        assert!(analyse(&h, level).count(AnomalyKind::DirtyWrite) == 1 && forbidden(&h, level) >= 1, "{level}");
    }
    // A writer that waited for the other's end is not one.
    let h = with(vec![
        reg(12, (100, 101), vec![write("r0", v(12, 1), v(1, 1), 0, (102, 103))], committed(120, 121)),
        reg(11, (104, 105), vec![write("r0", v(11, 1), v(12, 1), 0, (106, 122))], aborted(123, 124)),
    ]);
    assert_eq!(analyse(&h, Isolation::Snapshot).count(AnomalyKind::DirtyWrite), 0);
}

#[test]
fn a_key_left_with_an_aborted_version_is_a_dirty_write() {
    let mut h = clean();
    h.final_state[1].1 = Seen::Version { version: v(3, 1), balance: 0 };
    assert_eq!(kinds(&h), [(AnomalyKind::DirtyWrite, 1)]);
    assert_eq!(forbidden(&h, Isolation::ReadUncommitted), 1);
}

#[test]
fn two_committed_writers_of_one_read_version_are_a_lost_update() {
    // 12 and 13 both read r0 = 1.1 and write it; 12 commits before 13 writes.
    let h = with(vec![
        reg(
            12,
            (100, 101),
            vec![read("r0", v(1, 1), 0, (102, 103)), write("r0", v(12, 2), v(1, 1), 0, (104, 105))],
            committed(110, 111),
        ),
        reg(
            13,
            (100, 101),
            vec![read("r0", v(1, 1), 0, (102, 103)), write("r0", v(13, 2), v(1, 1), 0, (112, 113))],
            committed(114, 115),
        ),
    ]);
    let mut h = h;
    h.final_state[0].1 = Seen::Version { version: v(13, 2), balance: 0 };
    assert_eq!(kinds(&h), [(AnomalyKind::LostUpdate, 1)]);
    let a = analyse(&h, Isolation::Snapshot);
    assert_eq!(a.anomalies[2].examples[0].txns, [12, 13]);
    assert_eq!(forbidden(&h, Isolation::ReadCommitted), 0, "read committed allows it");
}

#[test]
fn an_accounts_total_that_changed_is_a_lost_update() {
    let mut h = clean();
    h.final_state[3].1 = Seen::Version { version: v(0, 3), balance: 1000 };
    // a1 back at its loaded version: the total is 1990.
    assert_eq!(kinds(&h), [(AnomalyKind::LostUpdate, 1)]);
}

#[test]
fn two_reads_of_a_key_that_differ_are_a_non_repeatable_read() {
    // 14 reads r1 = 2.2 twice around 15's committed write of it.
    let h = with(vec![
        reg(
            15,
            (102, 103),
            vec![read("r1", v(2, 2), 0, (104, 105)), write("r1", v(15, 2), v(2, 2), 0, (106, 107))],
            committed(108, 109),
        ),
        reg(
            14,
            (100, 101),
            vec![read("r1", v(2, 2), 0, (102, 103)), read("r1", v(15, 2), 0, (110, 111))],
            committed(112, 113),
        ),
    ]);
    let mut h = h;
    h.final_state[1].1 = Seen::Version { version: v(15, 2), balance: 0 };
    let found = kinds(&h);
    assert!(found.contains(&(AnomalyKind::NonRepeatableRead, 1)), "{found:?}");
    // Its second read also fits no snapshot of its begin: read skew too.
    assert!(found.contains(&(AnomalyKind::ReadSkew, 1)), "{found:?}");
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!(forbidden(&h, Isolation::ReadCommitted), 0, "read committed allows both");
}

#[test]
fn a_version_committed_after_the_begin_is_read_skew() {
    // 16 begins at [25, 26], after 1 committed and before 2 did, and reads both.
    let h = with(vec![reg(
        16,
        (25, 26),
        vec![read("r0", v(1, 1), 0, (42, 43)), read("r1", v(2, 2), 0, (44, 45))],
        committed(46, 47),
    )]);
    assert_eq!(kinds(&h), [(AnomalyKind::ReadSkew, 1)]);
    let what = &analyse(&h, Isolation::Snapshot).anomalies[4].examples[0].what;
    assert!(what.contains("2.2") && what.contains("40 ns"), "{what}");
    assert_eq!(forbidden(&h, Isolation::ReadCommitted), 0);
}

#[test]
fn a_version_replaced_before_the_begin_is_read_skew() {
    // 17 begins at 45, after 1's commit returned at 21, and reads r0's loaded version.
    let h = with(vec![reg(17, (45, 46), vec![read("r0", v(0, 0), 0, (47, 48))], committed(49, 50))]);
    assert_eq!(kinds(&h), [(AnomalyKind::ReadSkew, 1)]);
}

#[test]
fn an_audit_that_does_not_add_up_is_read_skew() {
    // 18 sees a0 after the transfer and a1 before it: 1990. (It also read a version
    // replaced before it began, so the snapshot check counts it as well.)
    let h = with(vec![txn(
        18,
        TxnKind::Audit,
        (85, 86),
        vec![read("a0", v(5, 2), 990, (87, 88)), read("a1", v(0, 3), 1000, (89, 90))],
        committed(91, 92),
    )]);
    assert_eq!(kinds(&h), [(AnomalyKind::ReadSkew, 2)]);
    let a = analyse(&h, Isolation::Snapshot);
    assert!(a.anomalies[4].examples.iter().any(|e| e.what.contains("total of 1990, not 2000")), "{a:#?}");
}

#[test]
fn values_nobody_wrote_are_unknown() {
    let h = with(vec![reg(
        19,
        (100, 101),
        vec![
            read_seen("r0", Seen::Absent, (102, 103)),
            read_seen("r1", Seen::Unknown { value: "junk".into() }, (104, 105)),
            read("a0", v(5, 2), 991, (106, 107)), // 5 wrote 990
            read("r0", v(77, 1), 0, (108, 109)),  // no transaction 77
            read("r1", v(1, 1), 0, (110, 111)),   // 1.1 is r0's
        ],
        committed(112, 113),
    )]);
    assert_eq!(kinds(&h), [(AnomalyKind::UnknownValue, 5)]);
    assert_eq!(forbidden(&h, Isolation::ReadUncommitted), 5);
}

#[test]
fn a_read_after_its_own_write_must_see_it() {
    let h = with(vec![reg(
        20,
        (100, 101),
        vec![
            read("r0", v(1, 1), 0, (102, 103)),
            write("r0", v(20, 2), v(1, 1), 0, (104, 105)),
            read("r0", v(1, 1), 0, (106, 107)),
        ],
        aborted(108, 109),
    )]);
    assert_eq!(kinds(&h), [(AnomalyKind::OwnWriteNotSeen, 1)]);
    assert_eq!(forbidden(&h, Isolation::ReadUncommitted), 1);
}

#[test]
fn values_round_trip_and_garbage_is_unknown() {
    let bytes = encode_value(v(12, 3), Some(v(0, 1)), -40);
    assert_eq!(bytes, b"12.3<0.1#-40");
    assert_eq!(decode_value(Some(&bytes)), Seen::Version { version: v(12, 3), balance: -40 });
    assert_eq!(decode_value(Some(&encode_value(v(1, 0), None, 5))), Seen::Version { version: v(1, 0), balance: 5 });
    assert_eq!(decode_value(None), Seen::Absent);
    for junk in [&b"12.3<0.1"[..], b"x.3<-#1", b"", &[0xff, 0xfe]] {
        assert!(matches!(decode_value(Some(junk)), Seen::Unknown { .. }), "{junk:?}");
    }
    let long = "é".repeat(100);
    let Seen::Unknown { value } = decode_value(Some(long.as_bytes())) else { panic!("decoded") };
    assert!(value.len() <= UNKNOWN_VALUE_BYTES_MAX && value.starts_with('é'), "{value}");
}

#[test]
fn the_two_latest_holders_are_distinct_transactions() {
    let mut best = [None, None];
    for cand in [(5, 1), (9, 2), (7, 3), (3, 4), (9, 2)] {
        offer(&mut best, cand);
    }
    assert_eq!(best, [Some((9, 2)), Some((7, 3))]);
}

#[test]
fn the_judge_of_read_uncommitted_is_read_committed_and_bounds_are_checked() {
    assert_eq!(default_judge(Isolation::ReadUncommitted), Isolation::ReadCommitted);
    assert_eq!(default_judge(Isolation::Snapshot), Isolation::Snapshot);
    let arch =
        ArchConfig::new(Architecture::SsdBm, ByteSize(1 << 20), ByteSize(0), "t", &std::env::temp_dir()).unwrap();
    let ok = IsolationConfig::new(arch, Isolation::Snapshot);
    ok.check().unwrap();
    for (bad, needle) in [
        (IsolationConfig { threads: 0, ..ok.clone() }, "threads 0"),
        (IsolationConfig { keys: KEYS_MAX + 1, ..ok.clone() }, "keys 4097"),
        (IsolationConfig { accounts: 1, ..ok.clone() }, "accounts 1"),
        (IsolationConfig { duration: Duration::ZERO, ..ok.clone() }, "duration"),
        (IsolationConfig { durability: Durability::None, ..ok.clone() }, "durability none"),
    ] {
        let e = bad.check().unwrap_err().to_string();
        assert!(e.contains(needle), "{e}");
    }
}

#[test]
fn reads_that_each_fit_the_begin_but_not_together_are_read_skew() {
    // 23 begins over [100, 110]. 21's commit of r0 is called at 105, inside that
    // window; 22 replaced r1's 2.2 with a commit that returned at 103. Reading 21's r0
    // puts the snapshot at 105 or later, reading 2.2 before 103: never both.
    let mut h = with(vec![
        reg(
            21,
            (90, 91),
            vec![read("r0", v(1, 1), 0, (92, 93)), write("r0", v(21, 2), v(1, 1), 0, (94, 95))],
            committed(105, 106),
        ),
        reg(
            22,
            (90, 91),
            vec![read("r1", v(2, 2), 0, (92, 93)), write("r1", v(22, 2), v(2, 2), 0, (96, 97))],
            committed(101, 103),
        ),
        reg(
            23,
            (100, 110),
            vec![read("r0", v(21, 2), 0, (111, 112)), read("r1", v(2, 2), 0, (113, 114))],
            committed(115, 116),
        ),
    ]);
    h.final_state[0].1 = Seen::Version { version: v(21, 2), balance: 0 };
    h.final_state[1].1 = Seen::Version { version: v(22, 2), balance: 0 };
    assert_eq!(kinds(&h), [(AnomalyKind::ReadSkew, 1)]);
    let what = &analyse(&h, Isolation::Snapshot).anomalies[4].examples[0].what;
    assert!(what.contains("105 ns") && what.contains("103 ns"), "{what}");
    // Either read alone fits.
    for drop in [0, 1] {
        let mut one = h.clone();
        one.txns.last_mut().unwrap().ops.remove(drop);
        assert_eq!(kinds(&one), [], "without read {drop}");
    }
}
