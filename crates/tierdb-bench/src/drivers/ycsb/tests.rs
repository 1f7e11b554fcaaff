//! The driver against a memory source: loads, runs, records and their checks.

use super::*;
use tierdb::ByteSize;
use tierdb::device::DramConfig;
use tierdb::sources::MemorySource;

fn source() -> MemorySource {
    let mut cfg = DramConfig::new(ByteSize(8 << 20));
    cfg.huge_pages = false;
    MemorySource::new(&cfg).unwrap()
}

fn config(seed: u64) -> DriverConfig {
    DriverConfig {
        threads: 1,
        warmup: Duration::ZERO,
        duration: None,
        seed,
        data_bytes: None,
        model_clock: ModelClock::Wall,
        model: false,
        page_provider: false,
        batch: 1,
    }
}

/// Loads `spec`, runs `ops` operations on one thread, and returns the tree's records.
fn load_and_run(spec: &YcsbSpec, seed: u64, ops: u32) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let src = source();
    let tree = Catalog::create_tree(&src, TABLE)?;
    load_records(&tree, &|_| Ok(()), spec, &config(seed), &|_, _, _| {})?;
    let keyspace = KeySpace::new(spec);
    let mut generator = OpGenerator::new(spec, &keyspace, seed, 0);
    let (mut key, mut value, mut out) = (Vec::new(), Vec::new(), vec![0u8; spec.record_length_bytes()]);
    let mut rng = value_rng(seed, 0);
    for _ in 0..ops {
        let op = generator.next();
        let found = execute(&tree, spec, &keyspace, op, &mut key, &mut value, &mut out, &mut rng)?;
        assert!(found, "seed {seed}: {op:?} did not find its key");
    }
    let mut records = Vec::new();
    tree.scan(&[], |k, v| {
        records.push((k.to_vec(), v.to_vec()));
        true
    })?;
    Ok(records)
}

#[test]
fn records_of_varying_length_stay_whole_through_every_operation() {
    let seed = 21;
    let spec = YcsbSpec::parse(
        "recordcount=300\nfieldcount=4\nfieldlengthdistribution=uniform\nminfieldlength=0\nfieldlength=64\n\
         readallfields=false\nreadproportion=0.2\nupdateproportion=0.3\ninsertproportion=0.1\n\
         scanproportion=0.1\nreadmodifywriteproportion=0.3",
        "test",
    )
    .unwrap();
    let records = load_and_run(&spec, seed, 3000).unwrap();
    assert!(records.len() > 300, "seed {seed}: inserts ran");
    let mut lengths = std::collections::BTreeSet::new();
    for (k, v) in &records {
        for f in 0..4 {
            let field = record_field(&spec, v, f).unwrap_or_else(|| panic!("seed {seed}: {k:?} malformed"));
            lengths.insert(field.len());
        }
    }
    assert_eq!((lengths.first(), lengths.last()), (Some(&0), Some(&64)), "seed {seed}");
}

#[test]
fn dataintegrity_checks_every_read_and_catches_other_bytes() {
    let seed = 22;
    let text = "recordcount=200\nfieldcount=3\nfieldlength=40\ndataintegrity=true\nreadallfields=false\n\
                readproportion=0.4\nupdateproportion=0.2\ninsertproportion=0.1\nreadmodifywriteproportion=0.3";
    let spec = YcsbSpec::parse(text, "test").unwrap();
    let records = load_and_run(&spec, seed, 2000).unwrap();
    assert!(records.iter().all(|(k, v)| verify_record(&spec, k, None, v)), "seed {seed}");
    // A table loaded with random values fails the first read.
    let plain = YcsbSpec::parse(&text.replace("dataintegrity=true", "dataintegrity=false"), "test").unwrap();
    let src = source();
    let tree = Catalog::create_tree(&src, TABLE).unwrap();
    load_records(&tree, &|_| Ok(()), &plain, &config(seed), &|_, _, _| {}).unwrap();
    let keyspace = KeySpace::new(&spec);
    let (mut key, mut value, mut out) = (Vec::new(), Vec::new(), vec![0u8; spec.record_length_bytes()]);
    let op = Op::Read { key: 7, field: Some(1) };
    let err =
        execute(&tree, &spec, &keyspace, op, &mut key, &mut value, &mut out, &mut value_rng(seed, 0)).unwrap_err();
    assert!(err.to_string().contains("field field1 read back other bytes than were written"), "{err}");
}

/// The bulk load stores exactly the records the loader inserted one at a time
/// before it: the sorted keys, each with the next value of the load's value stream
/// (so a run's data does not depend on how the tree is built), and reports progress
/// every `PROGRESS_EVERY` records; the transactional loader loads the same.
#[test]
fn the_load_stores_every_record_in_key_order_with_its_value() {
    let seed = 23;
    for text in [
        "recordcount=10000\nfieldcount=1\nfieldlength=100",
        "recordcount=3000\nfieldcount=3\nfieldlengthdistribution=uniform\nminfieldlength=0\nfieldlength=50",
    ] {
        let spec = YcsbSpec::parse(text, "test").unwrap();
        let mut keys: Vec<Vec<u8>> = KeySpace::new(&spec)
            .load_range()
            .map(|n| {
                let mut k = Vec::new();
                build_key(&spec, n, &mut k);
                k
            })
            .collect();
        keys.sort_unstable();
        let mut rng = value_rng(seed, u32::MAX);
        let expected: Vec<(Vec<u8>, Vec<u8>)> = keys
            .into_iter()
            .map(|k| {
                let mut v = Vec::new();
                build_record(&spec, &k, &mut rng, &mut v);
                (k, v)
            })
            .collect();
        let src = source();
        let tree = Catalog::create_tree(&src, TABLE).unwrap();
        let calls = std::sync::Mutex::new(Vec::new());
        let bulk = |on: bool| {
            calls.lock().unwrap().push(format!("bulk {on}"));
            Ok(())
        };
        let progress =
            |phase: &str, done: u64, total: u64| calls.lock().unwrap().push(format!("{phase} {done}/{total}"));
        let (records, _) = load_records(&tree, &bulk, &spec, &config(seed), &progress).unwrap();
        assert_eq!(records, expected.len() as u64, "{text}");
        let mut got = Vec::new();
        tree.scan(&[], |k, v| {
            got.push((k.to_vec(), v.to_vec()));
            true
        })
        .unwrap();
        assert!(got == expected, "{text}: other records than the sorted inserts");
        assert_eq!(tree.check_invariants().unwrap().entries, records, "{text}");
        let n = expected.len();
        let mut want = vec!["bulk true".to_string()];
        want.extend((0..n).step_by(PROGRESS_EVERY as usize).map(|i| format!("load {i}/{n}")));
        want.extend(["bulk false".to_string(), format!("load {n}/{n}")]);
        assert_eq!(*calls.lock().unwrap(), want, "{text}");
    }
    // Full pages unless the run can grow a leaf.
    for (text, fill) in [
        ("readproportion=0.5\nupdateproportion=0.5", 1.0),
        ("readproportion=0.9\ninsertproportion=0.1", BTREE_BULK_FILL_DEFAULT),
        ("fieldlengthdistribution=uniform\nreadproportion=0.5\nupdateproportion=0.5", BTREE_BULK_FILL_DEFAULT),
    ] {
        assert_eq!(load_fill(&YcsbSpec::parse(text, "test").unwrap()), fill, "{text}");
    }
    let spec = YcsbSpec::parse("recordcount=2000\nfieldcount=2\nfieldlength=30", "test").unwrap();
    let src = source();
    let tree = Catalog::create_tree(&src, TABLE).unwrap();
    let (records, _) = fill_table(&tree, &|_| Ok(()), &spec, &config(seed), &|_, _, _| {}).unwrap();
    assert_eq!((records, tree.check_invariants().unwrap().entries), (2000, 2000));
}

/// Sorting by word, then key, is sorting by key, for keys with a common prefix:
/// short keys, zero bytes and ties in the first sixteen bytes after it included.
#[test]
fn sort_words_keep_the_order_of_keys() {
    use rand::prelude::*;
    let mut rng = SmallRng::seed_from_u64(24);
    for skip in [0, 4] {
        let mut keys: Vec<Vec<u8>> = (0..5000)
            .map(|_| {
                let mut k = b"user"[..skip].to_vec();
                let len = rng.random_range(0..22);
                k.extend((0..len).map(|_| [0u8, 1, b'5', 0xff][rng.random_range(0..4)]));
                k
            })
            .collect();
        let mut by_word: Vec<([u64; 2], Vec<u8>)> = keys.iter().map(|k| (sort_words(k, skip), k.clone())).collect();
        keys.sort_unstable();
        by_word.sort_unstable();
        assert!(by_word.into_iter().map(|(_, k)| k).eq(keys), "prefix of {skip} bytes");
    }
}

#[test]
fn the_transactional_loader_refuses_what_its_executor_cannot_run() {
    let src = source();
    let tree = Catalog::create_tree(&src, TABLE).unwrap();
    for text in ["fieldlengthdistribution=zipfian", "dataintegrity=true"] {
        let spec = YcsbSpec::parse(text, "test").unwrap();
        let err = fill_table(&tree, &|_| Ok(()), &spec, &config(1), &|_, _, _| {}).unwrap_err();
        assert!(err.to_string().contains("constant field lengths and without dataintegrity"), "{err}");
    }
}
