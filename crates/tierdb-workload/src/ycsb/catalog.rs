//! YCSB's property names that we accept without applying them, and the nearest known
//! name for one that no YCSB version defines.
//!
//! A workload file YCSB's client accepts must run here unmodified, and YCSB accepts any
//! property name: its client, its workloads, its measurement code and its database
//! bindings each read the names they know and pass over the rest. So every name falls in
//! one of four classes:
//!
//! 1. applied: a property of the core workload that changes the data or the operations
//!    (the table of `ycsb/properties/table.rs`);
//! 2. ignored, listed here with the reason: a name some YCSB version reads that does not
//!    apply to an embedded engine run by tierdb's driver (the client's own options,
//!    measurement and export, the table name, the database bindings' options, the
//!    properties of YCSB's other workload classes);
//! 3. a database binding option by its namespace (`mongodb.url`, `hbase.…`): the
//!    bindings' options are too many to list one by one, and each binding prefixes its
//!    own;
//! 4. unknown: a warning, with the nearest known name (`suggest`).
//!
//! The lists were taken from YCSB's sources, every version in its history (`core/` and
//! each binding), as of commit `d9faaac8` (2026-04).

use serde::Serialize;
use std::fmt;

/// A property given that changes nothing in the run: a name YCSB reads that we do not
/// apply, or an applied one without effect alongside the other values.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct IgnoredProperty {
    /// The name.
    pub key: String,
    /// The value as written (at most 200 characters).
    pub value: String,
    /// Where it was given, e.g. `workload file w` or `command line`.
    pub origin: String,
    /// 1-based line, 0 for the command line.
    pub line: usize,
    /// Why it changes nothing, e.g. `database binding options`.
    pub reason: String,
}

/// A property name given in property text that no YCSB version defines: ignored, with a
/// warning.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct UnknownName {
    /// The name.
    pub key: String,
    /// The value as written (at most 200 characters).
    pub value: String,
    /// Where it was given.
    pub origin: String,
    /// 1-based line, 0 for the command line.
    pub line: usize,
    /// The nearest known name, if one is close.
    pub suggestion: Option<String>,
}

impl fmt::Display for UnknownName {
    /// `workload file w line 7: unknown property `recrodcount` ignored (no YCSB version
    /// defines it); did you mean `recordcount`?`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.origin)?;
        if self.line > 0 {
            write!(f, " line {}", self.line)?;
        }
        write!(f, ": unknown property `{}` ignored (no YCSB version defines it)", self.key)?;
        match &self.suggestion {
            Some(name) => write!(f, "; did you mean `{name}`?"),
            None => Ok(()),
        }
    }
}

/// One line that lists `ignored`, grouped by reason in the order the reasons first
/// appear: `workload file w: 4 properties ignored: table (no effect on an embedded
/// engine); maxscanrate, scanoptimelimit (database binding options); …`. The origin
/// leads when all share it. `None` when the list is empty.
pub fn ignored_warning(ignored: &[IgnoredProperty]) -> Option<String> {
    let first = ignored.first()?;
    let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
    for p in ignored {
        match groups.iter_mut().find(|(reason, _)| *reason == p.reason) {
            Some((_, keys)) => keys.push(&p.key),
            None => groups.push((&p.reason, vec![&p.key])),
        }
    }
    let origin =
        if ignored.iter().all(|p| p.origin == first.origin) { format!("{}: ", first.origin) } else { String::new() };
    let count = ignored.len();
    let list: Vec<String> = groups.iter().map(|(reason, keys)| format!("{} ({reason})", keys.join(", "))).collect();
    Some(format!("{origin}{count} propert{} ignored: {}", if count == 1 { "y" } else { "ies" }, list.join("; ")))
}

/// Why an accepted property is not applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Group {
    /// The YCSB client's own options: tierdb's driver has its own (`--threads`,
    /// `--duration`, `--json`, …).
    Client,
    /// Measurement and export of results: tierdb's report has its own.
    Measurement,
    /// Core workload options with no effect on an embedded engine.
    Embedded,
    /// Options of YCSB's database bindings.
    Binding,
    /// Properties of YCSB's other workload classes (time series, REST, constant
    /// occupancy).
    OtherWorkload,
}

impl Group {
    /// How the group is named in the warning that lists ignored properties.
    pub(crate) fn reason(self) -> &'static str {
        match self {
            Group::Client => "YCSB client options; tierdb's driver has its own (--threads, --duration, --json)",
            Group::Measurement => "measurement and export; tierdb's report has its own",
            Group::Embedded => "no effect on an embedded engine",
            Group::Binding => "database binding options",
            Group::OtherWorkload => "properties of YCSB's other workload classes",
        }
    }
}

/// Names read by YCSB's client (`Client`, `ClientThread`, `DBWrapper`): accepted,
/// not applied. `recordcount`, `operationcount`, `insertstart`, `insertcount` and
/// `workload` are applied and not listed.
const CLIENT: &[&str] = &[
    "db",
    "dotransactions",
    "exporter",
    "exportfile",
    "label",
    "maxexecutiontime",
    "spin.sleep",
    "status",
    "status.interval",
    "target",
    "threadcount",
];

/// Names read by YCSB's measurement code (`Measurements`, `OneMeasurement*`,
/// `DBWrapper`'s latency reporting), including the removed `co.correct`.
const MEASUREMENT: &[&str] = &[
    "co.correct",
    "hdrhistogram.fileoutput",
    "hdrhistogram.output.path",
    "hdrhistogram.percentiles",
    "histogram.buckets",
    "latencytrackederrors",
    "measurement.histogram.verbose",
    "measurement.interval",
    "measurement.raw.no_summary",
    "measurement.raw.output_file",
    "measurement.trackjvm",
    "measurementtype",
    "reportlatencyforeacherror",
    "timeseries.granularity",
];

/// Core workload names with no effect here: one table; reads return whole records
/// whether or not fields are named; an insert does not fail transiently (an engine
/// error stops the run), so there is nothing to retry.
const EMBEDDED: &[&str] = &[
    "core_workload_insertion_keep_going_on_error",
    "core_workload_insertion_retry_interval",
    "core_workload_insertion_retry_limit",
    "readallfieldsbyname",
    "table",
];

/// Binding options without a namespace of their own (the template's `maxscanrate`,
/// `scanoptimelimit` and `discardscannedrecord` are Cloud Bigtable's).
const BINDING: &[&str] = &[
    "autoflush",
    "batchsize",
    "cache",
    "clientbuffering",
    "clusterName",
    "columnfamily",
    "config",
    "consistency",
    "debug",
    "discardscannedrecord",
    "durability",
    "headers",
    "helperHost",
    "host",
    "hosts",
    "jointimeout",
    "keytab",
    "kudu_block_size",
    "kudu_buffer_num_ops",
    "kudu_debug",
    "kudu_master_addresses",
    "kudu_num_clients",
    "kudu_partition_schema",
    "kudu_pre_split_num_tablets",
    "kudu_print_row_errors",
    "kudu_sync_ops",
    "kudu_table_num_replicas",
    "masterQuorum",
    "maxscanrate",
    "mutatorMaxInflightRPCs",
    "mutatorMaxMemory",
    "notificationAddress",
    "notificationMember",
    "notificationPort",
    "password",
    "port",
    "ports",
    "prefetchmeta",
    "principal",
    "requestTimeout",
    "scanoptimelimit",
    "storeName",
    "test",
    "userName",
    "writebuffersize",
];

/// Namespaces of binding options (`<namespace>.<option>`), and `htrace` (the client's
/// tracing, configured under `htrace.`).
const NAMESPACES: &[&str] = &[
    "accumulo",
    "aerospike",
    "alibaba",
    "arangodb",
    "as",
    "azure",
    "azurecosmos",
    "azuretablestorage",
    "basicdb",
    "basicts",
    "cassandra",
    "cloudspanner",
    "cluster",
    "com",
    "couchbase",
    "couchbase2",
    "crail",
    "db",
    "documentdb",
    "dynamodb",
    "elasticsearch",
    "elasticsearch5",
    "es",
    "foundationdb",
    "gbudb",
    "gemfire",
    "geode",
    "google",
    "googlebigtable",
    "googlebigtable2",
    "googledatastore",
    "griddb",
    "hbase",
    "htrace",
    "hypertable",
    "ignite",
    "infinispan",
    "jdbc",
    "kudu",
    "log",
    "mapkeeper",
    "maprdb",
    "maprjsondb",
    "memcached",
    "mongodatabase",
    "mongodb",
    "nosqldb",
    "orientdb",
    "path",
    "postgrenosql",
    "rados",
    "redis",
    "response",
    "riak",
    "rocksdb",
    "s3",
    "scylla",
    "seaweed",
    "seaweedfs",
    "solr",
    "solr7",
    "tablestore",
    "tarantool",
    "timeout",
    "url",
    "voldemort",
    "voltdb",
    "zookeeper",
];

/// Properties of `TimeSeriesWorkload`, `RestWorkload` and `ConstantOccupancyWorkload`
/// (those of `RestWorkload` named `url.…` are covered by the namespace `url`).
const OTHER_WORKLOAD: &[&str] = &[
    "delayedintervals",
    "delayedseries",
    "deletedelimiter",
    "deleteproportion",
    "deleterecordcount",
    "deletezipfconstant",
    "disksize",
    "downsamplingfunction",
    "downsamplinginterval",
    "downsamplingkey",
    "fieldlengthdistfile",
    "groupbyfunction",
    "groupbykey",
    "groupbykeys",
    "insertrecordcount",
    "insertsizezipfconstant",
    "insertzipfconstant",
    "occupancy",
    "queryrandomtimespan",
    "querytimespan",
    "querytimespandelimiter",
    "randomtimeseriesorder",
    "randomwritetimestamporder",
    "readrecordcount",
    "readzipfconstant",
    "sparsity",
    "storageages",
    "tagcardinality",
    "tagcount",
    "tagkeylength",
    "tagpairdelimiter",
    "tagvaluelength",
    "timestampinterval",
    "timestampkey",
    "timestampunits",
    "updaterecordcount",
    "updatezipfconstant",
    "valuekey",
    "valuetype",
];

/// The group of a name YCSB reads but we do not apply, or `None` (an applied name, a
/// `tierdb.` one, or an unknown one).
pub(crate) fn ignored(key: &str) -> Option<Group> {
    let lists = [
        (CLIENT, Group::Client),
        (MEASUREMENT, Group::Measurement),
        (EMBEDDED, Group::Embedded),
        (BINDING, Group::Binding),
        (OTHER_WORKLOAD, Group::OtherWorkload),
    ];
    if let Some(&(_, group)) = lists.iter().find(|(list, _)| list.contains(&key)) {
        return Some(group);
    }
    match key.split_once('.') {
        Some(("tierdb", _)) => None,
        Some(("htrace", _)) => Some(Group::Client),
        Some((namespace, _)) if NAMESPACES.contains(&namespace) => Some(Group::Binding),
        _ => None,
    }
}

/// The known name nearest to `key`, if one is near enough to be a likely typo: among
/// `applied` (searched first, so it wins ties) and the names listed here, by edit
/// distance ignoring case, at most a third of the name's length (and at least 1, at
/// most 3 edits). For `namespace.option` with a misspelt binding namespace, the
/// namespace is corrected instead.
pub(crate) fn suggest<'a>(key: &str, applied: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let lower = key.to_ascii_lowercase();
    let budget = (key.chars().count() / 3).clamp(1, 3);
    let listed = [CLIENT, MEASUREMENT, EMBEDDED, BINDING, OTHER_WORKLOAD].into_iter().flatten().copied();
    let best = applied
        .into_iter()
        .chain(listed)
        .map(|name| (edit_distance(&lower, &name.to_ascii_lowercase()), name))
        .filter(|&(d, _)| d <= budget)
        .min_by_key(|&(d, _)| d);
    if let Some((_, name)) = best {
        return Some(name.to_owned());
    }
    let (namespace, option) = key.split_once('.')?;
    let budget = (namespace.chars().count() / 3).clamp(1, 3);
    NAMESPACES
        .iter()
        .map(|&n| (edit_distance(&namespace.to_ascii_lowercase(), n), n))
        .filter(|&(d, _)| d <= budget)
        .min_by_key(|&(d, _)| d)
        .map(|(_, n)| format!("{n}.{option}"))
}

/// Edit distance with adjacent transpositions (optimal string alignment): the fewest
/// insertions, deletions, substitutions and swaps of neighbours that turn `a` into `b`.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Three rows of the dynamic programme: two back (for swaps), one back, current.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        current[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (previous[j] + 1).min(current[j - 1] + 1).min(previous[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(before[j - 2] + 1);
            }
            current[j] = d;
        }
        std::mem::swap(&mut before, &mut previous);
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_sorted_and_disjoint() {
        let lists = [CLIENT, MEASUREMENT, EMBEDDED, BINDING, OTHER_WORKLOAD, NAMESPACES];
        for list in lists {
            assert!(list.windows(2).all(|w| w[0] < w[1]), "{list:?} is not sorted");
        }
        let all: Vec<&str> = lists[..5].iter().flat_map(|l| l.iter().copied()).collect();
        let mut unique = all.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), all.len(), "a name is in two lists");
    }

    #[test]
    fn groups() {
        assert_eq!(ignored("measurementtype"), Some(Group::Measurement));
        assert_eq!(ignored("threadcount"), Some(Group::Client));
        assert_eq!(ignored("table"), Some(Group::Embedded));
        assert_eq!(ignored("maxscanrate"), Some(Group::Binding));
        assert_eq!(ignored("mongodb.url"), Some(Group::Binding));
        assert_eq!(ignored("htrace.sampler.classes"), Some(Group::Client));
        assert_eq!(ignored("tagcount"), Some(Group::OtherWorkload));
        assert_eq!(ignored("recordcount"), None);
        assert_eq!(ignored("tierdb.seed"), None);
        assert_eq!(ignored("nosuch.option"), None);
    }

    #[test]
    fn one_line_lists_the_ignored_by_reason() {
        let p = |key: &str, origin: &str, reason: &str| IgnoredProperty {
            key: key.to_owned(),
            value: "v".to_owned(),
            origin: origin.to_owned(),
            line: 1,
            reason: reason.to_owned(),
        };
        assert_eq!(ignored_warning(&[]), None);
        let list = [p("table", "f", "a"), p("maxscanrate", "f", "b"), p("histogram.buckets", "f", "a")];
        assert_eq!(
            ignored_warning(&list).unwrap(),
            "f: 3 properties ignored: table, histogram.buckets (a); maxscanrate (b)"
        );
        let list = [p("table", "f", "a"), p("target", "command line", "a")];
        assert_eq!(ignored_warning(&list).unwrap(), "2 properties ignored: table, target (a)");
        assert_eq!(ignored_warning(&list[..1]).unwrap(), "f: 1 property ignored: table (a)");
        let unknown = UnknownName {
            key: "recrodcount".into(),
            value: "5".into(),
            origin: "workload file w".into(),
            line: 3,
            suggestion: Some("recordcount".into()),
        };
        assert_eq!(
            unknown.to_string(),
            "workload file w line 3: unknown property `recrodcount` ignored (no YCSB version defines it); \
             did you mean `recordcount`?"
        );
    }

    #[test]
    fn distances() {
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("recordcount", "recordcount"), 0);
        assert_eq!(edit_distance("recrodcount", "recordcount"), 1);
        assert_eq!(edit_distance("recordcont", "recordcount"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn suggestions() {
        let applied = ["recordcount", "requestdistribution", "readproportion"];
        assert_eq!(suggest("recrodcount", applied).as_deref(), Some("recordcount"));
        assert_eq!(suggest("RecordCount", applied).as_deref(), Some("recordcount"));
        assert_eq!(suggest("requestdistrbution", applied).as_deref(), Some("requestdistribution"));
        assert_eq!(suggest("measurmenttype", applied).as_deref(), Some("measurementtype"));
        assert_eq!(suggest("mongdb.url", applied).as_deref(), Some("mongodb.url"));
        assert_eq!(suggest("foo", applied), None);
        assert_eq!(suggest("completely.different", applied), None);
    }
}
