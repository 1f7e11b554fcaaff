//! Tests of YCSB property files: defaults, syntax, values as YCSB reads them, unknown
//! and ignored names, field lengths and histograms, bad and inconsistent values, the
//! round trip through `to_properties`, and parsing arbitrary text without a panic.

use super::*;
use crate::limits::RECORD_COUNT_MAX;
use proptest::prelude::*;

fn parse(text: &str) -> Result<YcsbSpec, WorkloadError> {
    YcsbSpec::parse(text, "workload file x.txt")
}

fn bad_value(result: Result<YcsbSpec, WorkloadError>) -> (usize, String, String) {
    match result {
        Err(WorkloadError::BadValue { line, key, value, .. }) => (line, key, value),
        other => panic!("expected BadValue, got {other:?}"),
    }
}

#[test]
fn defaults_are_ycsb_defaults() {
    let spec = parse("").unwrap();
    assert_eq!(spec.field_count(), 10);
    assert_eq!(spec.field_length_bytes(), 100);
    assert_eq!(spec.record_length_bytes(), 1000);
    assert!(spec.read_all_fields() && !spec.write_all_fields());
    assert_eq!(spec.mix(), Mix { read: 0.95, update: 0.05, insert: 0.0, scan: 0.0, read_modify_write: 0.0 });
    assert_eq!(spec.request_distribution(), RequestDistribution::Uniform);
    assert_eq!((spec.scan_length_min(), spec.scan_length_max()), (1, 1000));
    assert_eq!(spec.insert_order(), InsertOrder::Hashed);
    assert_eq!((spec.zero_padding(), spec.insert_start(), spec.insert_count()), (1, 0, 1000));
    assert_eq!((spec.key_prefix(), spec.field_name(3)), ("user", "field3".to_owned()));
    assert_eq!(spec.zipfian_constant(), 0.99);
    assert_eq!(spec.seed(), None);
    assert_eq!(spec.origin(), "workload file x.txt");
    assert_eq!(YcsbSpec::default().mix(), spec.mix());
}

#[test]
fn syntax_comments_whitespace_and_overrides() {
    let text = "# comment\n! also a comment\n\n  recordcount = 5000  \r\nfieldcount:4\nrecordcount=6000\n";
    let spec = parse(text).unwrap();
    assert_eq!(spec.record_count(), 6000);
    assert_eq!(spec.field_count(), 4);
    // Java's other forms: a blank as the separator, continuations, escapes.
    assert_eq!(parse("recordcount 5").unwrap().record_count(), 5);
    assert_eq!(parse("keyprefix=a\\\n  b").unwrap().key_prefix(), "ab");
    assert_eq!(parse("keyprefix=a\\u0042").unwrap().key_prefix(), "aB");
    assert!(matches!(parse("\nkeyprefix=\\u00"), Err(WorkloadError::Syntax { line: 2, .. })));
    // An empty name is no property YCSB defines: a warning.
    assert_eq!(parse("\n=5").unwrap().unknown()[0].line, 2);
}

#[test]
fn numbers_as_java_reads_them() {
    assert_eq!(parse("recordcount=+5").unwrap().record_count(), 5);
    assert_eq!(parse("readproportion=0.5d\nupdateproportion=5e-1F").unwrap().mix().read, 0.5);
    assert_eq!(bad_value(parse("readproportion=nan")).1, "readproportion");
    assert_eq!(bad_value(parse("readproportion=infinity")).1, "readproportion");
    assert_eq!(bad_value(parse("recordcount=1_000")).1, "recordcount");
    assert_eq!(bad_value(parse("recordcount=")).1, "recordcount");
}

#[test]
fn proportions_are_normalised() {
    let spec = parse("readproportion=1\nupdateproportion=1").unwrap();
    assert_eq!(spec.mix().read, 0.5);
    assert_eq!(spec.mix().update, 0.5);
    assert_eq!(spec.get("readproportion").as_deref(), Some("1"));
}

#[test]
fn an_unknown_name_is_a_warning_naming_its_line_and_the_nearest_name() {
    let spec = parse("recordcount=10\n\n# x\nrecrodcount=bar\nfoo=1\n").unwrap();
    assert_eq!(spec.record_count(), 10);
    let unknown = spec.unknown();
    assert_eq!(unknown.len(), 2);
    assert_eq!((unknown[0].key.as_str(), unknown[0].line), ("recrodcount", 4));
    assert_eq!(unknown[0].suggestion.as_deref(), Some("recordcount"));
    assert_eq!(unknown[1].suggestion, None);
    assert_eq!(
        spec.warnings(),
        [
            "workload file x.txt line 4: unknown property `recrodcount` ignored (no YCSB version defines it); \
             did you mean `recordcount`?",
            "workload file x.txt line 5: unknown property `foo` ignored (no YCSB version defines it)",
        ]
    );
    // Our own namespace is no exception; the command line refuses unknown names.
    assert_eq!(parse("tierdb.sed=1").unwrap().unknown()[0].suggestion.as_deref(), Some("tierdb.seed"));
    let err = YcsbSpec::default().set("recrodcount", "5").unwrap_err();
    assert_eq!(err.to_string(), "command line: unknown property `recrodcount`; did you mean `recordcount`?");
}

#[test]
fn names_ycsb_reads_are_accepted_and_listed() {
    let text = "workload=site.ycsb.workloads.CoreWorkload\ntable=t\nfieldlengthdistribution=constant\n\
                measurementtype=hdrhistogram\nthreadcount=4\nmongodb.url=mongodb://x\nhistogram.buckets=x";
    let spec = parse(text).unwrap();
    assert_eq!(spec, YcsbSpec { origin: spec.origin.clone(), ..YcsbSpec::default() });
    assert!(spec.unknown().is_empty());
    let ignored = spec.ignored();
    let ignored: Vec<(&str, usize)> = ignored.iter().map(|p| (p.key.as_str(), p.line)).collect();
    // Values of ignored names are not read (histogram.buckets=x is fine).
    assert_eq!(
        ignored,
        [("table", 2), ("measurementtype", 4), ("threadcount", 5), ("mongodb.url", 6), ("histogram.buckets", 7)]
    );
    assert_eq!(
        spec.warnings(),
        ["workload file x.txt: 5 properties ignored: table (no effect on an embedded engine); \
          measurementtype, histogram.buckets (measurement and export; tierdb's report has its own); \
          threadcount (YCSB client options; tierdb's driver has its own (--threads, --duration, --json)); \
          mongodb.url (database binding options)"]
    );
    assert_eq!(bad_value(parse("workload=site.ycsb.workloads.RestWorkload")).1, "workload");
    // The command line accepts them too.
    let mut spec = YcsbSpec::default();
    spec.set("exporter", "site.ycsb.measurements.exporter.JSONMeasurementsExporter").unwrap();
    assert_eq!(spec.ignored()[0].origin, COMMAND_LINE_ORIGIN);
}

#[test]
fn applied_properties_without_effect_are_listed() {
    let text = "scanproportion=0\nmaxscanlength=100\nrequestdistribution=zipfian\nhotspotopnfraction=0.9\n\
                minfieldlength=5\nfieldnameprefix=f\nexponential.frac=0.5\nreadproportion=1\nupdateproportion=0\n\
                writeallfields=true";
    let spec = parse(text).unwrap();
    let reasons: Vec<(String, String)> = spec.ignored().into_iter().map(|p| (p.key, p.reason)).collect();
    let expect = |k: &str, r: &str| (k.to_owned(), r.to_owned());
    assert_eq!(
        reasons,
        [
            expect("maxscanlength", "this mix has no scans"),
            expect("hotspotopnfraction", "requestdistribution is zipfian"),
            expect("minfieldlength", "fieldlengthdistribution is constant"),
            expect("fieldnameprefix", "field names are not stored; only dataintegrity values contain them"),
            expect("exponential.frac", "requestdistribution is zipfian"),
            expect("writeallfields", "this mix has no updates"),
        ]
    );
    // With the operations they concern, they apply; and an override can change that.
    let mut spec = parse("scanproportion=0.5\nmaxscanlength=100").unwrap();
    assert!(spec.ignored().is_empty());
    spec.set("scanproportion", "0").unwrap();
    assert_eq!(spec.ignored()[0].key, "maxscanlength");
    assert!(spec.is_given("maxscanlength") && !spec.is_given("minscanlength"));
}

#[test]
fn field_lengths_dataintegrity_and_exponential_values() {
    let spec = parse("fieldlengthdistribution=uniform\nminfieldlength=10\nfieldlength=20\nfieldcount=2").unwrap();
    assert!(spec.field_lengths_vary());
    assert_eq!(spec.record_length_bytes(), 2 * (4 + 20));
    assert_eq!(spec.record_length_mean_bytes(), 2.0 * (4.0 + 15.0));
    let spec = parse("fieldlengthdistribution=zipfian\nminfieldlength=0").unwrap();
    assert_eq!(spec.field_length_distribution(), FieldLengthDistribution::Zipfian);
    assert!(spec.record_length_mean_bytes() < 10.0 * (4.0 + 50.0));
    let (line, key, _) = bad_value(parse("fieldlengthdistribution=uniform\nminfieldlength=200"));
    assert_eq!((line, key.as_str()), (2, "minfieldlength"));
    // A constant length ignores minfieldlength, as YCSB does.
    assert!(parse("minfieldlength=200").is_ok());
    assert_eq!(bad_value(parse("fieldlengthdistribution=normal")).1, "fieldlengthdistribution");
    let (line, key, _) = bad_value(parse("dataintegrity=true\nfieldlengthdistribution=uniform"));
    assert_eq!((line, key.as_str()), (2, "fieldlengthdistribution"));
    assert!(parse("dataintegrity=true").unwrap().data_integrity());
    let spec = parse("requestdistribution=exponential\nexponential.percentile=90\nexponential.frac=0.25").unwrap();
    assert_eq!((spec.exponential_percentile(), spec.exponential_frac()), (90.0, 0.25));
    assert_eq!(bad_value(parse("exponential.percentile=100")).1, "exponential.percentile");
    assert_eq!(bad_value(parse("exponential.frac=0")).1, "exponential.frac");
    assert_eq!(bad_value(parse("exponential.frac=1e-320\nrequestdistribution=exponential")).1, "exponential.frac");
    assert_eq!(
        bad_value(parse("fieldlength=1048576\nfieldcount=16\nfieldlengthdistribution=uniform")).1,
        "fieldlengthdistribution"
    );
}

#[test]
fn a_histogram_is_read_beside_the_workload_file() {
    let dir = std::env::temp_dir().join(format!("tierdb-histogram-test-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("sub/lengths.txt"), "BlockSize\t10\n0\t1\n1\t1\n2\t2\n").unwrap();
    let workload = dir.join("w");
    std::fs::write(&workload, "fieldlengthdistribution=histogram\nfieldlengthhistogram=sub/lengths.txt\n").unwrap();
    let spec = YcsbSpec::from_file(&workload).unwrap();
    let h = spec.field_length_histogram().unwrap();
    assert_eq!(h.path(), dir.join("sub/lengths.txt"));
    assert_eq!(spec.record_length_bytes(), 10 * (4 + 20));
    // Written back, the path found is kept.
    let again = YcsbSpec::parse(&spec.to_properties(), "again").unwrap();
    assert_eq!(YcsbSpec { origin: spec.origin.clone(), ..again }, spec);
    // A missing file names the line that asked for it, or the distribution's line
    // when the default hist.txt was meant.
    std::fs::write(&workload, "recordcount=5\nfieldlengthdistribution=histogram\nfieldlengthhistogram=nosuch\n")
        .unwrap();
    let err = YcsbSpec::from_file(&workload).unwrap_err();
    assert!(matches!(&err, WorkloadError::BadValue { line: 3, key, .. } if key == "fieldlengthhistogram"), "{err}");
    assert!(err.to_string().contains("cannot read the field length histogram"), "{err}");
    std::fs::write(&workload, "\nfieldlengthdistribution=histogram\n").unwrap();
    let err = YcsbSpec::from_file(&workload).unwrap_err();
    assert!(matches!(&err, WorkloadError::BadValue { line: 2, key, .. } if key == "fieldlengthdistribution"), "{err}");
    assert!(err.to_string().contains("hist.txt (fieldlengthhistogram's default)"), "{err}");
    // Content YCSB cannot read names the histogram's own line.
    std::fs::write(dir.join("sub/lengths.txt"), "BlockSize\t10\n0\tmany\n").unwrap();
    std::fs::write(&workload, "fieldlengthdistribution=histogram\nfieldlengthhistogram=sub/lengths.txt\n").unwrap();
    assert!(matches!(YcsbSpec::from_file(&workload), Err(WorkloadError::Histogram { line: 2, .. })));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_values() {
    assert_eq!(bad_value(parse("recordcount=12x")), (1, "recordcount".into(), "12x".into()));
    assert_eq!(bad_value(parse("operationcount=-5")).1, "operationcount");
    assert_eq!(bad_value(parse("recordcount=0")).1, "recordcount");
    assert_eq!(bad_value(parse(&format!("recordcount={}", RECORD_COUNT_MAX + 1))).1, "recordcount");
    assert_eq!(bad_value(parse("recordcount=99999999999999999999999")).1, "recordcount");
    assert_eq!(bad_value(parse("fieldcount=0")).1, "fieldcount");
    assert_eq!(bad_value(parse("fieldcount=1025")).1, "fieldcount");
    assert_eq!(bad_value(parse("fieldlength=2000000")).1, "fieldlength");
    assert_eq!(bad_value(parse("readproportion=1.5")).1, "readproportion");
    assert_eq!(bad_value(parse("readproportion=-0.1")).1, "readproportion");
    assert_eq!(bad_value(parse("readproportion=NaN")).1, "readproportion");
    assert_eq!(bad_value(parse("readallfields=yes")).1, "readallfields");
    assert_eq!(bad_value(parse("requestdistribution=normal")).1, "requestdistribution");
    assert_eq!(bad_value(parse("scanlengthdistribution=constant")).1, "scanlengthdistribution");
    assert_eq!(bad_value(parse("insertorder=random")).1, "insertorder");
    assert_eq!(bad_value(parse("tierdb.zipfianconstant=0")).1, "tierdb.zipfianconstant");
    assert_eq!(bad_value(parse("tierdb.zipfianconstant=-1")).1, "tierdb.zipfianconstant");
    assert_eq!(bad_value(parse("tierdb.zipfianconstant=inf")).1, "tierdb.zipfianconstant");
    assert_eq!(bad_value(parse("tierdb.seed=-1")).1, "tierdb.seed");
    assert_eq!(bad_value(parse("keyprefix=a b")).1, "keyprefix");
    assert_eq!(bad_value(parse("hotspotopnfraction=2")).1, "hotspotopnfraction");
    let err = parse("\n\n\n\n\n\nfieldcount=0").unwrap_err();
    assert!(err.to_string().starts_with("workload file x.txt line 7: bad value `0` for `fieldcount`"), "{err}");
}

#[test]
fn inconsistent_values_blame_the_last_key_written() {
    assert_eq!(bad_value(parse("maxscanlength=10\nminscanlength=20")), (2, "minscanlength".into(), "20".into()));
    assert_eq!(bad_value(parse("minscanlength=20\nmaxscanlength=10")), (2, "maxscanlength".into(), "10".into()));
    // Against a default: the key written is blamed.
    assert_eq!(bad_value(parse("minscanlength=2000")), (1, "minscanlength".into(), "2000".into()));
    let zero = "readproportion=0\nupdateproportion=0\nscanproportion=0";
    assert_eq!(bad_value(parse(zero)).1, "scanproportion");
    assert_eq!(bad_value(parse("recordcount=100\ninsertstart=100")).1, "insertstart");
    assert_eq!(bad_value(parse("recordcount=100\ninsertstart=50\ninsertcount=51")).1, "insertcount");
    let spec = parse("recordcount=100\ninsertstart=50\ninsertcount=50").unwrap();
    assert_eq!((spec.insert_start(), spec.insert_count()), (50, 50));
    let spec = parse("recordcount=100\ninsertstart=30").unwrap();
    assert_eq!(spec.insert_count(), 70);
    assert_eq!(bad_value(parse("fieldcount=1024\nfieldlength=1048576")).1, "fieldlength");
}

#[test]
fn set_validates_and_is_atomic() {
    let mut spec = YcsbSpec::default();
    spec.set("recordcount", " 5000 ").unwrap();
    spec.set("tierdb.seed", "0x10").unwrap();
    assert_eq!((spec.record_count(), spec.seed()), (5000, Some(16)));
    let before = spec.clone();
    let err = spec.set("minscanlength", "5000").unwrap_err();
    assert_eq!(
        err.to_string(),
        "command line: bad value `5000` for `minscanlength`: minscanlength (5000) exceeds maxscanlength (1000)"
    );
    assert!(matches!(spec.set("nosuch", "1"), Err(WorkloadError::UnknownProperty { line: 0, .. })));
    assert!(spec.set("tierdb.zipfianconstant", "0").is_err());
    assert_eq!(spec, before);
    spec.set("readproportion", "0").unwrap();
    assert_eq!(spec.mix().update, 1.0);
}

#[test]
fn properties_round_trip() {
    let mut spec = parse("recordcount=77\ninsertstart=7\ninsertcount=70\nkeyprefix=k\nzeropadding=12").unwrap();
    spec.set("tierdb.seed", "123").unwrap();
    spec.set("readproportion", "0.3333333333333333").unwrap();
    spec.set("requestdistribution", "hotspot").unwrap();
    let again = parse(&spec.to_properties()).unwrap();
    assert_eq!(YcsbSpec { origin: spec.origin.clone(), ..again }, spec);
}

#[test]
fn serialises_effective_values() {
    let spec = YcsbSpec::parse("requestdistribution=zipfian\nreadproportion=1\nupdateproportion=1", "t").unwrap();
    let json = serde_json::to_value(&spec).unwrap();
    assert_eq!(json["record_count"], 1000);
    assert_eq!(json["request_distribution"], "zipfian");
    assert_eq!(json["insert_order"], "hashed");
    assert_eq!(json["mix"]["read"], 0.5);
    assert_eq!(json["seed"], serde_json::Value::Null);
    assert_eq!(json["insert_count"], 1000);
}

#[test]
fn from_file_names_the_file() {
    let dir = std::env::temp_dir().join(format!("tierdb-workload-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("w.txt");
    std::fs::write(&path, "recordcount=10\nfieldcount=0\n").unwrap();
    let err = YcsbSpec::from_file(&path).unwrap_err();
    assert!(
        err.to_string()
            .starts_with(&format!("workload file {} line 2: bad value `0` for `fieldcount`", path.display())),
        "{err}"
    );
    // ISO-8859-1 bytes (not UTF-8) are read as Java reads them.
    std::fs::write(&path, b"# \xa9 2010 Yahoo!\nrecordcount=10\n").unwrap();
    assert_eq!(YcsbSpec::from_file(&path).unwrap().record_count(), 10);
    assert!(matches!(YcsbSpec::from_file(dir.join("missing")), Err(WorkloadError::Io { .. })));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Lines built from real keys and odd values, to reach the validation paths.
fn property_lines() -> impl Strategy<Value = String> {
    let keys: Vec<&'static str> =
        PROPERTIES.iter().map(|p| p.key).chain(["table", "threadcount", "mongodb.url", "nosuch"]).collect();
    let value = prop_oneof![
        "[0-9]{0,25}",
        "-?[0-9]{0,3}\\.[0-9]{0,3}(e[+-]?[0-9]{1,3})?",
        Just("uniform".to_owned()),
        Just("zipfian".to_owned()),
        Just("latest".to_owned()),
        Just("hotspot".to_owned()),
        Just("sequential".to_owned()),
        Just("exponential".to_owned()),
        Just("constant".to_owned()),
        Just("true".to_owned()),
        Just("0x".to_owned()),
        ".{0,10}",
    ];
    prop::collection::vec((prop::sample::select(keys), "[ =:]{1,2}", value), 0..12)
        .prop_map(|lines| lines.into_iter().map(|(k, sep, v)| format!("{k}{sep}{v}\n")).collect::<String>())
}

proptest! {
    #[test]
    fn parse_never_panics_on_arbitrary_text(text in "\\PC{0,400}") {
        let _ = YcsbSpec::parse(&text, "proptest");
    }

    #[test]
    fn parse_never_panics_on_property_like_text(text in property_lines()) {
        if let Ok(spec) = YcsbSpec::parse(&text, "proptest") {
            // A spec that parses is valid and survives a round trip.
            prop_assert!(spec.check().is_ok());
            let again = YcsbSpec::parse(&spec.to_properties(), "proptest").unwrap();
            prop_assert_eq!(again, spec);
        }
    }
}
