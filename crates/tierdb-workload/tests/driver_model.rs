//! A driver's use of the whole API, against a model store: load with several threads,
//! run with several threads, and check that every operation names a record that exists
//! (and every insert one that does not), by key name, with whole-record and
//! single-field values of the right sizes.

use std::collections::HashMap;
use std::sync::Mutex;
use tierdb_workload::{KeySpace, LoadKeys, Op, OpGenerator, YcsbSpec, build_key, field_range, fill_record, value_rng};

const SEED: u64 = 0x5EED;
const THREADS: u32 = 3;

fn load_and_run(name: &str, ops_per_thread: u32) {
    let mut spec = YcsbSpec::builtin(name).unwrap();
    spec.set("recordcount", "5000").unwrap();
    spec.set("fieldcount", "4").unwrap();
    spec.set("fieldlength", "16").unwrap();
    let store: Mutex<HashMap<Vec<u8>, Vec<u8>>> = Mutex::new(HashMap::new());

    // Load phase.
    std::thread::scope(|scope| {
        for thread in 0..THREADS {
            let (spec, store) = (&spec, &store);
            scope.spawn(move || {
                let mut rng = value_rng(SEED, thread);
                let (mut key, mut value) = (Vec::new(), Vec::new());
                for number in LoadKeys::new(spec, thread, THREADS) {
                    build_key(spec, number, &mut key);
                    fill_record(spec, &mut rng, &mut value);
                    let previous = store.lock().unwrap().insert(key.clone(), value.clone());
                    assert!(previous.is_none(), "seed {SEED}: key {number} loaded twice");
                }
            });
        }
    });
    assert_eq!(store.lock().unwrap().len(), 5000, "seed {SEED}: two key numbers share a name");

    // Run phase.
    let keyspace = KeySpace::new(&spec);
    std::thread::scope(|scope| {
        for thread in 0..THREADS {
            let (spec, store, keyspace) = (&spec, &store, &keyspace);
            scope.spawn(move || {
                let mut generator = OpGenerator::new(spec, keyspace, SEED, thread);
                let mut rng = value_rng(SEED, thread);
                let (mut key, mut value) = (Vec::new(), Vec::new());
                for _ in 0..ops_per_thread {
                    let op = generator.next();
                    build_key(spec, op.key(), &mut key);
                    let mut store = store.lock().unwrap();
                    match op {
                        Op::Insert { key: number } => {
                            fill_record(spec, &mut rng, &mut value);
                            assert!(store.insert(key.clone(), value.clone()).is_none(), "seed {SEED}: {op:?}");
                            drop(store);
                            keyspace.acknowledge_insert(number);
                        }
                        Op::Read { field, .. } | Op::Scan { field, .. } => {
                            let record = store.get(&key).unwrap_or_else(|| panic!("seed {SEED}: {op:?} missing"));
                            if let Some(f) = field {
                                assert_eq!(record[field_range(spec, f)].len(), 16);
                            }
                        }
                        Op::Update { field, .. } | Op::ReadModifyWrite { field, .. } => {
                            let record = store.get_mut(&key).unwrap_or_else(|| panic!("seed {SEED}: {op:?} missing"));
                            match field {
                                Some(f) => {
                                    tierdb_workload::ycsb::fill_printable(&mut rng, &mut record[field_range(spec, f)])
                                }
                                None => fill_record(spec, &mut rng, record),
                            }
                            assert_eq!(record.len(), spec.record_length_bytes());
                        }
                    }
                }
            });
        }
    });
    let inserted = keyspace.inserts_issued();
    assert_eq!(keyspace.acknowledged_end(), 5000 + inserted);
    assert_eq!(store.lock().unwrap().len() as u64, 5000 + inserted);
}

#[test]
fn every_standard_workload_names_only_existing_records() {
    for name in ["a", "b", "c", "d", "e", "f", "ro", "rw:30", "scan"] {
        load_and_run(name, 5000);
    }
}
