//! The built-in workloads: YCSB's six standard ones and those of van Renen et al.
//!
//! * `a` … `f` (also `workloada` … `workloadf`): our copies of YCSB's standard property
//!   files, in `workloads/` and embedded here: A 50/50 read/update, B 95/5 read/update,
//!   C read only, D 95% read / 5% insert with `latest` requests, E 95% scans of up to 100
//!   records / 5% insert, F 50% read / 50% read-modify-write; zipfian unless noted.
//! * `ro`, `rw:PCT`, `scan`: the workloads of van Renen et al., "Managing Non-Volatile
//!   Memory in Database Systems", SIGMOD 2018, §5.2, all with zipfian requests of
//!   exponent 1.0: point lookups of one random field; PCT% updates of one random field
//!   and the rest such lookups; and scans of 1 to 100 records reading one random field of each (§5.2).
//!
//! Record counts and sizes are YCSB's defaults (1000 records of 10 × 100 bytes); a
//! driver overrides `recordcount` and `operationcount` with [`YcsbSpec::set`].

use crate::error::WorkloadError;
use crate::ycsb::YcsbSpec;
use std::path::Path;

/// The standard YCSB workloads, by short name.
const STANDARD: [(&str, &str); 6] = [
    ("a", include_str!("../../workloads/workloada")),
    ("b", include_str!("../../workloads/workloadb")),
    ("c", include_str!("../../workloads/workloadc")),
    ("d", include_str!("../../workloads/workloadd")),
    ("e", include_str!("../../workloads/workloade")),
    ("f", include_str!("../../workloads/workloadf")),
];

/// van Renen et al. §5.2, read only: lookups of one random field.
const READ_ONLY: &str = "\
recordcount=1000
operationcount=1000
workload=site.ycsb.workloads.CoreWorkload
readallfields=false
readproportion=1
updateproportion=0
requestdistribution=zipfian
tierdb.zipfianconstant=1.0
";

/// van Renen et al. §5.2, read/write: the update share is set from the name.
const READ_WRITE: &str = "\
recordcount=1000
operationcount=1000
workload=site.ycsb.workloads.CoreWorkload
readallfields=false
writeallfields=false
requestdistribution=zipfian
tierdb.zipfianconstant=1.0
";

/// van Renen et al. §5.2, scans of 1 to 100 records.
const SCAN: &str = "\
recordcount=1000
operationcount=1000
workload=site.ycsb.workloads.CoreWorkload
readallfields=false
readproportion=0
updateproportion=0
scanproportion=1
minscanlength=1
maxscanlength=100
scanlengthdistribution=uniform
requestdistribution=zipfian
tierdb.zipfianconstant=1.0
";

/// The built-in names, as listed in errors.
const KNOWN: &str = "a, b, c, d, e, f (or workloada … workloadf), ro, rw:PCT (PCT = 0..=100), scan";

impl YcsbSpec {
    /// The built-in workload `name`: `a` … `f` or `workloada` … `workloadf`, `ro`,
    /// `rw:PCT` with an integer `PCT` in `0..=100`, or `scan` (see the
    /// [module documentation](crate::ycsb::builtin)).
    ///
    /// # Errors
    ///
    /// [`WorkloadError::UnknownWorkload`] for another name, and
    /// [`WorkloadError::BadValue`] (key `rw`) for a malformed `rw:` percentage.
    pub fn builtin(name: &str) -> Result<YcsbSpec, WorkloadError> {
        // Their values are ours: none counts as given (nothing to warn about).
        YcsbSpec::builtin_text(name).map(|mut spec| {
            spec.forget_provenance();
            spec
        })
    }

    fn builtin_text(name: &str) -> Result<YcsbSpec, WorkloadError> {
        let origin = format!("built-in workload {name}");
        let short = name.strip_prefix("workload").unwrap_or(name);
        if let Some((_, text)) = STANDARD.iter().find(|(n, _)| *n == short) {
            return YcsbSpec::parse(text, &origin);
        }
        match name {
            "ro" => YcsbSpec::parse(READ_ONLY, &origin),
            "scan" => YcsbSpec::parse(SCAN, &origin),
            _ => match name.strip_prefix("rw:") {
                Some(percent) => read_write(percent, &origin),
                None => Err(WorkloadError::UnknownWorkload { name: name.to_owned(), known: KNOWN.to_owned() }),
            },
        }
    }

    /// A built-in workload if `arg` names one, else the property file at path `arg`.
    ///
    /// # Errors
    ///
    /// The errors of [`YcsbSpec::builtin`] for names starting with `rw:`, those of
    /// [`YcsbSpec::from_file`] for an existing file, and
    /// [`WorkloadError::UnknownWorkload`] when `arg` is neither.
    pub fn resolve(arg: &str) -> Result<YcsbSpec, WorkloadError> {
        match YcsbSpec::builtin(arg) {
            Err(WorkloadError::UnknownWorkload { .. }) if Path::new(arg).exists() => YcsbSpec::from_file(arg),
            result => result,
        }
    }

    /// The names [`YcsbSpec::builtin`] accepts, with `rw:PCT` standing for 101 names.
    pub fn builtin_names() -> &'static [&'static str] {
        &["a", "b", "c", "d", "e", "f", "ro", "rw:PCT", "scan"]
    }
}

/// `rw:PCT`: PCT% updates, the rest reads.
fn read_write(percent_text: &str, origin: &str) -> Result<YcsbSpec, WorkloadError> {
    let percent = (!percent_text.is_empty() && percent_text.bytes().all(|b| b.is_ascii_digit()))
        .then(|| percent_text.parse::<u32>().ok())
        .flatten()
        .filter(|p| *p <= 100)
        .ok_or_else(|| WorkloadError::BadValue {
            origin: "workload name".to_owned(),
            line: 0,
            key: "rw".to_owned(),
            value: percent_text.chars().take(200).collect(),
            reason: "the update percentage must be a whole number from 0 to 100".to_owned(),
        })?;
    let update = f64::from(percent) / 100.0;
    let text = format!("{READ_WRITE}readproportion={}\nupdateproportion={update}\n", 1.0 - update);
    YcsbSpec::parse(&text, origin)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ycsb::{InsertOrder, Mix, RequestDistribution, ScanLengthDistribution};

    fn mix(read: f64, update: f64, insert: f64, scan: f64, read_modify_write: f64) -> Mix {
        Mix { read, update, insert, scan, read_modify_write }
    }

    #[test]
    fn standard_workloads() {
        let expected = [
            ("a", mix(0.5, 0.5, 0.0, 0.0, 0.0), RequestDistribution::Zipfian),
            ("b", mix(0.95, 0.05, 0.0, 0.0, 0.0), RequestDistribution::Zipfian),
            ("c", mix(1.0, 0.0, 0.0, 0.0, 0.0), RequestDistribution::Zipfian),
            ("d", mix(0.95, 0.0, 0.05, 0.0, 0.0), RequestDistribution::Latest),
            ("e", mix(0.0, 0.0, 0.05, 0.95, 0.0), RequestDistribution::Zipfian),
            ("f", mix(0.5, 0.0, 0.0, 0.0, 0.5), RequestDistribution::Zipfian),
        ];
        for (name, mix, distribution) in expected {
            let spec = YcsbSpec::builtin(name).unwrap();
            assert_eq!(spec.mix(), mix, "workload {name}");
            assert_eq!(spec.request_distribution(), distribution, "workload {name}");
            assert_eq!((spec.record_count(), spec.operation_count()), (1000, 1000), "workload {name}");
            assert!(spec.read_all_fields() && !spec.write_all_fields(), "workload {name}");
            assert_eq!(spec.zipfian_constant(), 0.99, "workload {name}");
            assert_eq!(spec.origin(), format!("built-in workload {name}"));
            assert_eq!(YcsbSpec::builtin(&format!("workload{name}")).unwrap().mix(), mix);
        }
        let e = YcsbSpec::builtin("e").unwrap();
        assert_eq!((e.scan_length_min(), e.scan_length_max()), (1, 100));
        assert_eq!(e.scan_length_distribution(), ScanLengthDistribution::Uniform);
        assert_eq!(e.insert_order(), InsertOrder::Hashed);
    }

    #[test]
    fn van_renen_workloads() {
        let ro = YcsbSpec::builtin("ro").unwrap();
        assert_eq!(ro.mix(), mix(1.0, 0.0, 0.0, 0.0, 0.0));
        assert_eq!((ro.request_distribution(), ro.zipfian_constant()), (RequestDistribution::Zipfian, 1.0));
        assert!(!ro.read_all_fields());

        for (name, update) in [("rw:0", 0.0), ("rw:5", 0.05), ("rw:50", 0.5), ("rw:100", 1.0)] {
            let rw = YcsbSpec::builtin(name).unwrap();
            assert!((rw.mix().update - update).abs() < 1e-12, "{name}: {:?}", rw.mix());
            assert!((rw.mix().read - (1.0 - update)).abs() < 1e-12, "{name}: {:?}", rw.mix());
            assert!(!rw.read_all_fields() && !rw.write_all_fields(), "{name}");
            assert_eq!(rw.zipfian_constant(), 1.0, "{name}");
        }

        let scan = YcsbSpec::builtin("scan").unwrap();
        assert_eq!(scan.mix(), mix(0.0, 0.0, 0.0, 1.0, 0.0));
        assert_eq!((scan.scan_length_min(), scan.scan_length_max()), (1, 100));
        assert_eq!(scan.scan_length_distribution(), ScanLengthDistribution::Uniform);
        assert_eq!((scan.request_distribution(), scan.zipfian_constant()), (RequestDistribution::Zipfian, 1.0));
    }

    #[test]
    fn bad_names() {
        for bad in ["rw:101", "rw:x", "rw:", "rw:-1", "rw:+5", "rw:5.5"] {
            match YcsbSpec::builtin(bad) {
                Err(WorkloadError::BadValue { key, .. }) => assert_eq!(key, "rw", "{bad}"),
                other => panic!("{bad}: {other:?}"),
            }
        }
        let err = YcsbSpec::builtin("g").unwrap_err();
        assert!(matches!(&err, WorkloadError::UnknownWorkload { name, .. } if name == "g"), "{err:?}");
        assert!(err.to_string().contains("rw:PCT"), "{err}");
        assert!(matches!(YcsbSpec::builtin("A"), Err(WorkloadError::UnknownWorkload { .. })));
    }

    #[test]
    fn resolve_takes_names_then_files() {
        assert_eq!(YcsbSpec::resolve("c").unwrap().mix().read, 1.0);
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/workloads/workloadf");
        let from_file = YcsbSpec::resolve(path).unwrap();
        assert_eq!(from_file.origin(), format!("workload file {path}"));
        assert_eq!(from_file.mix(), YcsbSpec::builtin("f").unwrap().mix());
        assert!(matches!(YcsbSpec::resolve("no/such/file"), Err(WorkloadError::UnknownWorkload { .. })));
        assert!(matches!(YcsbSpec::resolve("rw:200"), Err(WorkloadError::BadValue { .. })));
    }
}
