//! YCSB's shipped workload files (`tests/ycsb-files/`, copied byte for byte from YCSB's
//! repository) parse here unmodified, with the values YCSB's client would use; what
//! they set that does not apply is listed, nothing is unknown; and their operations can
//! be generated. A name no YCSB version defines warns with the nearest known name, and a
//! bad value fails naming the file and line.

use std::path::{Path, PathBuf};
use tierdb_workload::{
    InsertOrder, KeySpace, Mix, OpGenerator, OpKind, RequestDistribution, ScanLengthDistribution, WorkloadError,
    YcsbSpec,
};

const CORE_FILES: [&str; 6] = ["workloada", "workloadb", "workloadc", "workloadd", "workloade", "workloadf"];

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ycsb-files").join(name)
}

#[test]
fn the_fixtures_are_ycsbs_files_byte_for_byte() {
    // Spot checks that git or an editor did not normalise them (README.md lists their
    // blob hashes): the licence header with its trailing blanks, and CRLF line ends
    // where YCSB has them.
    let a = std::fs::read(fixture("workloada")).unwrap();
    assert!(a.starts_with(b"# Copyright (c) 2010 Yahoo! Inc. All rights reserved.   "), "workloada's first line");
    assert!(!a.contains(&b'\r'));
    for crlf in ["workloadd", "workloadf"] {
        let text = std::fs::read(fixture(crlf)).unwrap();
        assert!(text.windows(2).any(|w| w == b"\r\n"), "{crlf} lost its CRLF line ends");
    }
    let template = std::fs::read_to_string(fixture("workload_template")).unwrap();
    assert!(template.contains("# Licensed under the Apache License, Version 2.0"));
    assert!(template.contains("#maxexecutiontime= \n"), "the template's trailing blank");
    assert_eq!(template.lines().count(), 222);
}

#[test]
fn every_core_workload_file_parses_to_our_built_in_copy() {
    for name in CORE_FILES {
        let path = fixture(name);
        let spec = YcsbSpec::from_file(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(spec.origin(), format!("workload file {}", path.display()));
        // The same values as our built-in copy: equal property text but for the first
        // line, which names the origin.
        let builtin = YcsbSpec::builtin(name).unwrap().to_properties();
        let ours = spec.to_properties();
        assert_eq!(ours.lines().skip(1).collect::<Vec<_>>(), builtin.lines().skip(1).collect::<Vec<_>>(), "{name}");
        // Everything they set applies: nothing to warn about.
        assert_eq!(spec.warnings(), Vec::<String>::new(), "{name}");
    }
    let a = YcsbSpec::from_file(fixture("workloada")).unwrap();
    assert_eq!(a.mix(), Mix { read: 0.5, update: 0.5, insert: 0.0, scan: 0.0, read_modify_write: 0.0 });
    assert_eq!((a.record_count(), a.operation_count()), (1000, 1000));
    assert_eq!(a.request_distribution(), RequestDistribution::Zipfian);
    let d = YcsbSpec::from_file(fixture("workloadd")).unwrap();
    assert_eq!(d.request_distribution(), RequestDistribution::Latest);
    assert_eq!(d.mix().insert, 0.05);
    let e = YcsbSpec::from_file(fixture("workloade")).unwrap();
    assert_eq!((e.scan_length_max(), e.scan_length_distribution()), (100, ScanLengthDistribution::Uniform));
    let f = YcsbSpec::from_file(fixture("workloadf")).unwrap();
    assert_eq!(f.mix().read_modify_write, 0.5);
}

#[test]
fn the_template_parses_with_ycsbs_defaults_and_lists_what_it_ignores() {
    let path = fixture("workload_template");
    let spec = YcsbSpec::from_file(&path).unwrap();
    assert_eq!((spec.record_count(), spec.operation_count()), (1_000_000, 3_000_000));
    assert_eq!((spec.insert_start(), spec.insert_count()), (0, 1_000_000));
    assert_eq!((spec.field_count(), spec.field_length_bytes(), spec.record_length_bytes()), (10, 100, 1000));
    assert!(spec.read_all_fields() && !spec.write_all_fields());
    assert_eq!(spec.mix(), Mix { read: 0.95, update: 0.05, insert: 0.0, scan: 0.0, read_modify_write: 0.0 });
    assert_eq!((spec.request_distribution(), spec.insert_order()), (RequestDistribution::Zipfian, InsertOrder::Hashed));
    assert_eq!((spec.scan_length_max(), spec.hotspot_data_fraction(), spec.hotspot_op_fraction()), (1000, 0.2, 0.8));
    assert!(spec.unknown().is_empty(), "{:?}", spec.unknown());
    let ignored: Vec<(String, usize)> = spec.ignored().into_iter().map(|p| (p.key, p.line)).collect();
    let expect = |k: &str, line| (k.to_owned(), line);
    assert_eq!(
        ignored,
        [
            expect("maxscanlength", 85),
            expect("maxscanrate", 91),
            expect("scanoptimelimit", 95),
            expect("discardscannedrecord", 100),
            expect("scanlengthdistribution", 103),
            expect("hotspotdatafraction", 116),
            expect("hotspotopnfraction", 119),
            expect("table", 125),
            expect("measurementtype", 131),
            expect("histogram.buckets", 166),
            expect("timeseries.granularity", 169),
        ]
    );
    assert_eq!(
        spec.warnings(),
        [format!(
            "workload file {}: 11 properties ignored: maxscanlength, scanlengthdistribution (this mix has no \
             scans); maxscanrate, scanoptimelimit, discardscannedrecord (database binding options); \
             hotspotdatafraction, hotspotopnfraction (requestdistribution is zipfian); table (no effect on an \
             embedded engine); measurementtype, histogram.buckets, timeseries.granularity (measurement and \
             export; tierdb's report has its own)",
            path.display()
        )]
    );
}

#[test]
fn every_shipped_file_generates_its_mix() {
    for name in CORE_FILES.into_iter().chain(["workload_template"]) {
        let mut spec = YcsbSpec::from_file(fixture(name)).unwrap();
        spec.set("recordcount", "5000").unwrap();
        let keyspace = KeySpace::new(&spec);
        let seed = 77;
        let mut generator = OpGenerator::new(&spec, &keyspace, seed, 0);
        let ops = 20_000;
        let mut counts = [0u32; 5];
        for _ in 0..ops {
            let op = generator.next();
            if let tierdb_workload::Op::Insert { key } = op {
                keyspace.acknowledge_insert(key);
            }
            counts[op.kind() as usize] += 1;
        }
        for kind in OpKind::ALL {
            let observed = f64::from(counts[kind as usize]) / f64::from(ops);
            let expected = spec.mix().proportion(kind);
            assert!((observed - expected).abs() < 0.015, "seed {seed}, {name}: {kind:?} {observed} vs {expected}");
        }
    }
}

#[test]
fn an_unknown_property_warns_with_the_nearest_known_name() {
    let dir = tempdir("unknown");
    let path = dir.join("workloada");
    let shipped = std::fs::read_to_string(fixture("workloada")).unwrap();
    let lines = shipped.lines().count();
    std::fs::write(&path, format!("{shipped}readproprotion=0.9\nscanlenghtdistribution=zipfian\nfoo=bar\n")).unwrap();
    let spec = YcsbSpec::from_file(&path).unwrap();
    // Ignored: workloada's values stand.
    assert_eq!(spec.mix().read, 0.5);
    let at = |n: usize| format!("workload file {} line {}", path.display(), lines + n);
    assert_eq!(
        spec.warnings(),
        [
            format!(
                "{}: unknown property `readproprotion` ignored (no YCSB version defines it); did you mean \
                 `readproportion`?",
                at(1)
            ),
            format!(
                "{}: unknown property `scanlenghtdistribution` ignored (no YCSB version defines it); did you mean \
                 `scanlengthdistribution`?",
                at(2)
            ),
            format!("{}: unknown property `foo` ignored (no YCSB version defines it)", at(3)),
        ]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_bad_value_fails_naming_the_file_and_line() {
    let dir = tempdir("bad");
    let path = dir.join("workloadd");
    // workloadd has CRLF line ends: the line count must not be thrown off by them.
    let shipped = std::fs::read_to_string(fixture("workloadd")).unwrap();
    let line = shipped.lines().position(|l| l.trim_end() == "requestdistribution=latest").unwrap() + 1;
    for (bad, key, value) in [
        ("requestdistribution=newest", "requestdistribution", "newest"),
        ("requestdistribution=latest\r\nfieldcount=ten", "fieldcount", "ten"),
    ] {
        std::fs::write(&path, shipped.replace("requestdistribution=latest", bad)).unwrap();
        let err = YcsbSpec::from_file(&path).unwrap_err();
        let bad_line = line + usize::from(key == "fieldcount");
        match &err {
            WorkloadError::BadValue { line: l, key: k, value: v, .. } => {
                assert_eq!((*l, k.as_str(), v.as_str()), (bad_line, key, value), "{err}")
            }
            other => panic!("{other:?}"),
        }
        assert!(
            err.to_string().starts_with(&format!(
                "workload file {} line {bad_line}: bad value `{value}` for `{key}`",
                path.display()
            )),
            "{err}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

fn tempdir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tierdb-ycsb-files-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
