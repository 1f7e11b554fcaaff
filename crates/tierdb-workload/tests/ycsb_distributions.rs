//! One test per value YCSB offers for `requestdistribution`, `fieldlengthdistribution`,
//! `insertorder` and `scanlengthdistribution`: each is read from property text as a
//! workload file gives it, and what it generates has the distribution's shape.

use std::collections::HashMap;
use tierdb_workload::{
    KeySpace, Op, OpGenerator, YcsbSpec, build_key, build_record, fill_record, record_field, value_rng,
};

/// Request keys of `ops` reads (inserts acknowledged at once), by key number.
fn request_counts(text: &str, seed: u64, ops: u32) -> (YcsbSpec, HashMap<u64, u32>, Vec<u64>) {
    let spec = YcsbSpec::parse(text, "test").unwrap();
    let keyspace = KeySpace::new(&spec);
    let mut generator = OpGenerator::new(&spec, &keyspace, seed, 0);
    let mut counts = HashMap::new();
    let mut order = Vec::new();
    for _ in 0..ops {
        match generator.next() {
            Op::Insert { key } => keyspace.acknowledge_insert(key),
            op => {
                assert!(op.key() < keyspace.acknowledged_end(), "seed {seed}: {op:?} names a missing key");
                *counts.entry(op.key()).or_insert(0) += 1;
                order.push(op.key());
            }
        }
    }
    (spec, counts, order)
}

/// The share of `counts` that falls on keys in `range`.
fn share(counts: &HashMap<u64, u32>, range: std::ops::Range<u64>) -> f64 {
    let total: u32 = counts.values().sum();
    let inside: u32 = counts.iter().filter(|(k, _)| range.contains(k)).map(|(_, c)| c).sum();
    f64::from(inside) / f64::from(total)
}

const READS: &str = "recordcount=1000\nreadproportion=1\nupdateproportion=0\n";

#[test]
fn requestdistribution_uniform() {
    let seed = 101;
    let (_, counts, _) = request_counts(&format!("{READS}requestdistribution=uniform"), seed, 100_000);
    assert_eq!(counts.len(), 1000, "seed {seed}: every key requested");
    for decile in 0..10 {
        let s = share(&counts, decile * 100..(decile + 1) * 100);
        assert!((s - 0.1).abs() < 0.01, "seed {seed}: decile {decile} has {s}");
    }
}

#[test]
fn requestdistribution_zipfian() {
    let seed = 102;
    let (spec, counts, _) = request_counts(&format!("{READS}requestdistribution=zipfian"), seed, 100_000);
    let mut by_count: Vec<u32> = counts.values().copied().collect();
    by_count.sort_unstable_by(|a, b| b.cmp(a));
    // Rank 1 of a Zipf(0.99) over 1000 items gets 1/H ≈ 13% of the requests; the ten
    // most popular keys far more than ten uniform ones (1%).
    let top = f64::from(by_count[0]) / 100_000.0;
    assert!((top - 0.133).abs() < 0.01, "seed {seed}: the hottest key has {top}");
    let top10: u32 = by_count[..10].iter().sum();
    assert!(top10 > 30_000, "seed {seed}: {top10}");
    // Scattered: the hottest keys are not the lowest numbers.
    let hottest = counts.iter().max_by_key(|(_, c)| **c).map(|(k, _)| *k).unwrap();
    assert_eq!(spec.zipfian_constant(), 0.99);
    assert!(counts.keys().all(|&k| k < 1000), "seed {seed}");
    assert!(share(&counts, 0..10) < 0.5, "seed {seed}: hottest key {hottest}");
}

#[test]
fn requestdistribution_latest() {
    let seed = 103;
    // Inserts move the popularity to the newest keys as they are acknowledged.
    let text = "recordcount=1000\nreadproportion=0.9\nupdateproportion=0\ninsertproportion=0.1\n\
                requestdistribution=latest";
    let (_, _, order) = request_counts(text, seed, 20_000);
    let (_, counts, _) = request_counts(&format!("{READS}requestdistribution=latest"), seed, 50_000);
    let newest = counts.iter().max_by_key(|(k, c)| (**c, **k)).map(|(k, _)| *k).unwrap();
    assert_eq!(newest, 999, "seed {seed}");
    assert!(share(&counts, 900..1000) > 0.6, "seed {seed}");
    // Late requests name keys inserted during the run.
    assert!(order[order.len() - 100..].iter().any(|&k| k >= 1000), "seed {seed}");
}

#[test]
fn requestdistribution_hotspot() {
    let seed = 104;
    let text = format!("{READS}requestdistribution=hotspot\nhotspotdatafraction=0.1\nhotspotopnfraction=0.7");
    let (_, counts, _) = request_counts(&text, seed, 100_000);
    let hot = share(&counts, 0..100);
    assert!((hot - 0.7).abs() < 0.01, "seed {seed}: the hot tenth has {hot}");
}

#[test]
fn requestdistribution_sequential() {
    let seed = 105;
    let text = "recordcount=1000\ninsertstart=200\ninsertcount=300\nreadproportion=1\nupdateproportion=0\n\
                requestdistribution=sequential";
    let (_, _, order) = request_counts(text, seed, 700);
    let expected: Vec<u64> = (200..500).chain(200..500).chain(200..300).collect();
    assert_eq!(order, expected, "seed {seed}: the loaded keys in order, wrapping around");
}

#[test]
fn requestdistribution_exponential() {
    let seed = 106;
    // YCSB's defaults: 95% of the ages below 10000 × 0.8571428571 records. Ages beyond
    // the oldest record are drawn again (YCSB too), so the share is 95% of the ages
    // that fall within the 10000 records.
    let text = format!("{READS}recordcount=10000\nrequestdistribution=exponential");
    let (spec, counts, _) = request_counts(&text, seed, 100_000);
    assert_eq!((spec.exponential_percentile(), spec.exponential_frac()), (95.0, 0.857_142_857_1));
    let range = 10_000.0 * spec.exponential_frac();
    let expected = 0.95 / (1.0 - 0.05f64.powf(10_000.0 / range));
    let recent = share(&counts, 10_000 - range as u64..10_000);
    assert!((recent - expected).abs() < 0.005, "seed {seed}: the newest 85.7% got {recent}, expected {expected}");
    // Popularity falls with age: each thousand keys, newest first, gets less.
    let by_age: Vec<f64> = (0..10).map(|t| share(&counts, 9_000 - t * 1000..10_000 - t * 1000)).collect();
    assert!(by_age.windows(2).all(|w| w[0] > w[1]), "seed {seed}: {by_age:?}");
    // A steeper setting: 90% to the newest tenth.
    let text = format!(
        "{READS}recordcount=10000\nrequestdistribution=exponential\nexponential.frac=0.1\nexponential.percentile=90"
    );
    let (_, counts, _) = request_counts(&text, seed, 100_000);
    let recent = share(&counts, 9_000..10_000);
    assert!((recent - 0.9).abs() < 0.005, "seed {seed}: the newest tenth got {recent}");
}

/// The field lengths of `records` records of `text`, and the records' lengths.
fn field_lengths(text: &str, seed: u64, records: u32) -> (YcsbSpec, Vec<usize>, Vec<usize>) {
    let spec = YcsbSpec::parse(text, "test").unwrap();
    let mut rng = value_rng(seed, 0);
    let (mut fields, mut lengths) = (Vec::new(), Vec::new());
    let mut record = Vec::new();
    for _ in 0..records {
        fill_record(&spec, &mut rng, &mut record);
        assert!(record.len() <= spec.record_length_bytes(), "seed {seed}");
        lengths.push(record.len());
        for f in 0..spec.field_count() {
            let field = record_field(&spec, &record, f).unwrap();
            assert!(field.iter().all(|b| (0x20..=0x5F).contains(b)), "seed {seed}: printable");
            fields.push(field.len());
        }
    }
    (spec, fields, lengths)
}

fn mean(values: &[usize]) -> f64 {
    values.iter().sum::<usize>() as f64 / values.len() as f64
}

#[test]
fn fieldlengthdistribution_constant() {
    let (spec, fields, lengths) = field_lengths("fieldlengthdistribution=constant\nfieldlength=37", 201, 100);
    assert!(!spec.field_lengths_vary());
    assert!(fields.iter().all(|&l| l == 37) && lengths.iter().all(|&l| l == 370));
    assert_eq!(spec.record_length_mean_bytes(), 370.0);
}

#[test]
fn fieldlengthdistribution_uniform() {
    let seed = 202;
    let text = "fieldlengthdistribution=uniform\nminfieldlength=20\nfieldlength=80";
    let (spec, fields, lengths) = field_lengths(text, seed, 5000);
    assert_eq!((fields.iter().min(), fields.iter().max()), (Some(&20), Some(&80)), "seed {seed}");
    assert!((mean(&fields) - 50.0).abs() < 0.5, "seed {seed}: mean {}", mean(&fields));
    // Records carry a 4-byte length per field.
    assert!((mean(&lengths) - spec.record_length_mean_bytes()).abs() < 5.0, "seed {seed}");
    assert_eq!(spec.record_length_bytes(), 10 * (4 + 80));
}

#[test]
fn fieldlengthdistribution_zipfian() {
    let seed = 203;
    let text = "fieldlengthdistribution=zipfian\nminfieldlength=10\nfieldlength=100";
    let (spec, fields, _) = field_lengths(text, seed, 5000);
    let at_min = fields.iter().filter(|&&l| l == 10).count() as f64 / fields.len() as f64;
    // Zipf(0.99) over 91 lengths: the shortest gets about 1/H(91) ≈ 19%.
    assert!((at_min - 0.19).abs() < 0.02, "seed {seed}: {at_min} at the shortest length");
    assert!(fields.iter().all(|l| (10..=100).contains(l)), "seed {seed}");
    let expected = spec.record_length_mean_bytes() / 10.0 - 4.0;
    assert!((mean(&fields) - expected).abs() < 1.0, "seed {seed}: mean {} vs {expected}", mean(&fields));
}

#[test]
fn fieldlengthdistribution_histogram() {
    let seed = 204;
    let dir = std::env::temp_dir().join(format!("tierdb-distributions-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // YCSB's format: block size, then bucket and count per line (tab separated).
    std::fs::write(dir.join("hist.txt"), "BlockSize\t32\n0\t10\n1\t30\n2\t60\n3\t0\n").unwrap();
    let workload = dir.join("w");
    std::fs::write(&workload, "fieldlengthdistribution=histogram\nfieldcount=4\n").unwrap();
    // The default file name, found beside the workload file.
    let spec = YcsbSpec::from_file(&workload).unwrap();
    assert_eq!(spec.field_length_histogram().unwrap().path(), dir.join("hist.txt"));
    let mut rng = value_rng(seed, 0);
    let mut record = Vec::new();
    let mut counts: HashMap<usize, u32> = HashMap::new();
    for _ in 0..5000 {
        fill_record(&spec, &mut rng, &mut record);
        for f in 0..4 {
            *counts.entry(record_field(&spec, &record, f).unwrap().len()).or_insert(0) += 1;
        }
    }
    let mut lengths: Vec<usize> = counts.keys().copied().collect();
    lengths.sort_unstable();
    assert_eq!(lengths, [32, 64, 96], "seed {seed}: bucket i gives (i + 1) × 32 bytes");
    let share = |len| f64::from(counts[&len]) / 20_000.0;
    assert!((share(64) - 0.3).abs() < 0.015 && (share(96) - 0.6).abs() < 0.015, "seed {seed}: {counts:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The key names of key numbers `0..n` of `text`.
fn key_names(text: &str, n: u64) -> Vec<String> {
    let spec = YcsbSpec::parse(text, "test").unwrap();
    let mut key = Vec::new();
    (0..n)
        .map(|i| {
            build_key(&spec, i, &mut key);
            String::from_utf8(key.clone()).unwrap()
        })
        .collect()
}

#[test]
fn insertorder_hashed() {
    let names = key_names("insertorder=hashed", 1000);
    // YCSB's name of key 0: "user" and the FNV-1a 64 hash of 0.
    assert_eq!(names[0], "user6284781860667377211");
    let mut sorted = names.clone();
    sorted.sort();
    assert_ne!(sorted, names, "consecutive inserts land all over the key space");
    sorted.dedup();
    assert_eq!(sorted.len(), 1000);
}

#[test]
fn insertorder_ordered() {
    let names = key_names("insertorder=ordered\nzeropadding=6", 1000);
    assert_eq!((names[0].as_str(), names[999].as_str()), ("user000000", "user000999"));
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(sorted, names, "with enough padding, key order is insert order");
    // Without padding, the numbers sort as text, as in YCSB.
    assert_eq!(key_names("insertorder=ordered", 11)[10], "user10");
}

/// Scan lengths of `ops` scans of `text`.
fn scan_lengths(text: &str, seed: u64, ops: u32) -> Vec<u32> {
    let spec =
        YcsbSpec::parse(&format!("readproportion=0\nupdateproportion=0\nscanproportion=1\n{text}"), "t").unwrap();
    let keyspace = KeySpace::new(&spec);
    let mut generator = OpGenerator::new(&spec, &keyspace, seed, 0);
    (0..ops)
        .map(|_| match generator.next() {
            Op::Scan { len, .. } => len,
            other => panic!("seed {seed}: {other:?}"),
        })
        .collect()
}

#[test]
fn scanlengthdistribution_uniform() {
    let seed = 301;
    let lengths = scan_lengths("scanlengthdistribution=uniform\nminscanlength=5\nmaxscanlength=104", seed, 50_000);
    assert_eq!((lengths.iter().min(), lengths.iter().max()), (Some(&5), Some(&104)), "seed {seed}");
    let short = lengths.iter().filter(|&&l| l < 55).count() as f64 / lengths.len() as f64;
    assert!((short - 0.5).abs() < 0.01, "seed {seed}: {short}");
}

#[test]
fn scanlengthdistribution_zipfian() {
    let seed = 302;
    let lengths = scan_lengths("scanlengthdistribution=zipfian\nminscanlength=5\nmaxscanlength=104", seed, 50_000);
    assert!(lengths.iter().all(|l| (5..=104).contains(l)), "seed {seed}");
    let shortest = lengths.iter().filter(|&&l| l == 5).count() as f64 / lengths.len() as f64;
    // Zipf(0.99) over 100 lengths: the shortest gets about 1/H(100) ≈ 19%.
    assert!((shortest - 0.19).abs() < 0.015, "seed {seed}: {shortest}");
}

#[test]
fn dataintegrity_records_are_ycsbs_deterministic_values() {
    let spec = YcsbSpec::parse("dataintegrity=true\nfieldcount=2\nfieldlength=30", "t").unwrap();
    let mut record = Vec::new();
    build_record(&spec, b"user1", &mut value_rng(1, 0), &mut record);
    // YCSB: "user1:field0" then ":" and the Java hash of the string so far, cut at 30.
    assert_eq!(&record[..12], b"user1:field0");
    assert_eq!(&record[30..42], b"user1:field1");
    let mut again = Vec::new();
    build_record(&spec, b"user1", &mut value_rng(2, 0), &mut again);
    assert_eq!(again, record, "the values do not depend on the random stream");
}
