//! The load: the records in key order, bulk-loaded bottom-up into the driver's
//! table ([`fill_table`]), through the architecture's page source.

use super::*;

pub(super) struct Loader<'a> {
    pub(super) engine: &'a Engine,
    pub(super) spec: &'a YcsbSpec,
    pub(super) cfg: &'a DriverConfig,
    pub(super) progress: ProgressFn<'a>,
}

impl SourceVisitor for Loader<'_> {
    /// Records loaded, seconds.
    type Output = Result<(u64, f64)>;

    fn visit<S: PageSource>(self, source: &S) -> Result<(u64, f64)> {
        let (_, records, secs) = load_table(self.engine, source, self.spec, self.cfg, self.progress)?;
        Ok((records, secs))
    }
}

/// Creates the table in `source` (the page source of `engine`) and inserts the load's
/// records in key order, in the buffer manager's bulk-load mode. Returns the tree, the
/// record count and the load's seconds.
pub(super) fn load_table<'s, S: PageSource>(
    engine: &Engine,
    source: &'s S,
    spec: &YcsbSpec,
    cfg: &DriverConfig,
    progress: ProgressFn<'_>,
) -> Result<(BTree<'s, S>, u64, f64)> {
    let tree = Catalog::create_tree(source, TABLE).context("creating the table")?;
    let bulk = |on: bool| match engine {
        Engine::Buffer(b) => b.set_bulk_load(on).context("switching bulk-load mode"),
        Engine::Memory(_) | Engine::Direct(_) => Ok(()),
    };
    let (records, secs) = load_records(&tree, &bulk, spec, cfg, progress)?;
    Ok((tree, records, secs))
}

/// `load_records` for the transactional mode (the sibling `ycsb_txn`), whose executor
/// updates fields in place at fixed offsets and does not check values: it refuses
/// workloads whose field lengths vary or that ask for `dataintegrity`.
///
/// # Errors
/// Such a workload; those of `load_records`.
pub fn fill_table<S: PageSource>(
    tree: &BTree<'_, S>,
    bulk: &dyn Fn(bool) -> Result<()>,
    spec: &YcsbSpec,
    cfg: &DriverConfig,
    progress: ProgressFn<'_>,
) -> Result<(u64, f64)> {
    if spec.field_lengths_vary() || spec.data_integrity() {
        bail!(
            "the transactional mode runs workloads with constant field lengths and without dataintegrity; \
             {} has fieldlengthdistribution={}, dataintegrity={} (run it without --durability)",
            spec.origin(),
            spec.field_length_distribution().name(),
            spec.data_integrity()
        );
    }
    load_records(tree, bulk, spec, cfg, progress)
}

/// Loads the load's records into the empty `tree` in key order with one bulk load
/// ([`BTree::bulk_load`]: the tree built bottom-up, each node written once, as full as
/// [`load_fill`] says), with `bulk(true)` before and `bulk(false)` after (the buffer
/// manager's bulk-load mode, where there is one). The records go straight to the tree:
/// if it is a database's, they bypass its log (a bulk load refuses a logged tree
/// handle). Returns the record count and the load's seconds.
pub(super) fn load_records<S: PageSource>(
    tree: &BTree<'_, S>,
    bulk: &dyn Fn(bool) -> Result<()>,
    spec: &YcsbSpec,
    cfg: &DriverConfig,
    progress: ProgressFn<'_>,
) -> Result<(u64, f64)> {
    // The load's time is all of it: building and sorting the keys, the records, the
    // tree, and the buffer manager's end of bulk-load mode (ready to run).
    let started = Instant::now();
    let keyspace = KeySpace::new(spec);
    let load = keyspace.load_range();
    let records = load.end - load.start;
    // The keys are not kept: each is sorted as the two big-endian words of its sixteen
    // bytes after the key prefix that every key starts with, and its key number, from
    // which it is built again when the tree takes it. Nearly every comparison ends at
    // the words; a tie builds both keys (a word is zero padded, so a tie falls through
    // to the keys, and the order is the keys' order).
    let prefix_len = spec.key_prefix().len();
    let mut scratch = Vec::new();
    let mut keys: Vec<[u64; 3]> = load
        .map(|n| {
            build_key(spec, n, &mut scratch);
            let [hi, lo] = sort_words(&scratch, prefix_len);
            [hi, lo, n]
        })
        .collect();
    keys.sort_unstable_by(|a, b| (a[0], a[1]).cmp(&(b[0], b[1])).then_with(|| compare_keys(spec, a[2], b[2])));
    bulk(true)?;
    let mut rng = value_rng(cfg.seed, u32::MAX);
    // The records in key order, each value built as the tree asks for it.
    let mut i = 0usize;
    let mut previous = Vec::new();
    let loaded = tree.bulk_load(load_fill(spec), |key, value| {
        let Some(&[_, _, n]) = keys.get(i) else { return Ok(false) };
        build_key(spec, n, &mut scratch);
        if i > 0 && previous == scratch {
            bail!("duplicate key {:?} in the load", String::from_utf8_lossy(&scratch));
        }
        key.extend_from_slice(&scratch);
        build_record(spec, &scratch, &mut rng, value);
        std::mem::swap(&mut previous, &mut scratch);
        if (i as u64).is_multiple_of(PROGRESS_EVERY) {
            progress("load", i as u64, records);
        }
        i += 1;
        Ok(true)
    });
    let loaded = loaded.map_err(|e| match e.downcast_ref::<tierdb::Error>() {
        // The tree's errors come after the record that caused them, or with it.
        Some(_) => e.context(format!("loading record {} of {records}", i.saturating_sub(1))),
        None => e,
    })?;
    assert_eq!(loaded, records, "the bulk load took every record");
    bulk(false)?;
    drop(keys);
    let load_secs = started.elapsed().as_secs_f64();
    progress("load", records, records);
    Ok((records, load_secs))
}

/// How full [`load_records`] fills the tree's nodes: whole pages when the run never
/// grows a leaf (no inserts, and records of constant length, which updates rewrite in
/// place), so that the tree is as small as the sorted inserts the bulk load replaced
/// left it (YCSB's hashed keys share short prefixes: those filled leaves nearly
/// whole), and the run's data size does not change; else
/// [`BTREE_BULK_FILL_DEFAULT`], whose room takes the run's first inserts into a leaf
/// without splitting it. (A later epoch's workload that inserts finds full leaves, as
/// it did after the sorted inserts.)
pub(super) fn load_fill(spec: &YcsbSpec) -> f64 {
    if spec.mix().insert == 0.0 && !spec.field_lengths_vary() { 1.0 } else { BTREE_BULK_FILL_DEFAULT }
}

/// Bytes `skip..skip + 16` of `key`, zero padded, as two big-endian words: for keys
/// that share their first `skip` bytes, smaller words mean a smaller key.
pub(super) fn sort_words(key: &[u8], skip: usize) -> [u64; 2] {
    let mut bytes = [0u8; 16];
    let tail = key.get(skip..).unwrap_or_default();
    let n = tail.len().min(16);
    bytes[..n].copy_from_slice(&tail[..n]);
    let (hi, lo) = bytes.split_at(8);
    [u64::from_be_bytes(hi.try_into().expect("8 bytes")), u64::from_be_bytes(lo.try_into().expect("8 bytes"))]
}

/// The order of the names of key numbers `a` and `b` (for ties of [`sort_words`]).
pub(super) fn compare_keys(spec: &YcsbSpec, a: u64, b: u64) -> std::cmp::Ordering {
    let (mut ka, mut kb) = (Vec::new(), Vec::new());
    build_key(spec, a, &mut ka);
    build_key(spec, b, &mut kb);
    ka.cmp(&kb)
}
