//! The operations straight on a tree and the records' layout ([`execute`]): fields in
//! place, or records with a length header read and written back whole.

use super::*;

/// Operations straight on a tree: no log, no transactions.
pub(super) struct TreeOps<'t, 's, S: PageSource, R: rand::Rng> {
    pub(super) tree: &'t BTree<'s, S>,
    pub(super) spec: &'t YcsbSpec,
    pub(super) keyspace: &'t KeySpace,
    pub(super) key: Vec<u8>,
    pub(super) value: Vec<u8>,
    pub(super) out: Vec<u8>,
    pub(super) rng: R,
    /// The keys of a batch being read ahead.
    pub(super) keys: Vec<Vec<u8>>,
    /// Batches left that skip reading ahead, and how many the last skip was.
    pub(super) prefetch_skip: u32,
    pub(super) prefetch_backoff: u32,
}

impl<'t, 's, S: PageSource> TreeOps<'t, 's, S, rand::rngs::Xoshiro256PlusPlus> {
    /// Worker `thread`'s operations on `tree`, its values drawn from `seed`.
    pub(super) fn new(
        tree: &'t BTree<'s, S>,
        spec: &'t YcsbSpec,
        keyspace: &'t KeySpace,
        seed: u64,
        thread: u32,
    ) -> Self {
        TreeOps {
            tree,
            spec,
            keyspace,
            key: Vec::new(),
            value: Vec::new(),
            out: vec![0u8; spec.record_length_bytes()],
            rng: value_rng(seed, thread),
            keys: Vec::new(),
            prefetch_skip: 0,
            prefetch_backoff: 0,
        }
    }
}

impl<S: PageSource, R: rand::Rng> Executor for TreeOps<'_, '_, S, R> {
    #[inline]
    fn prefetch(&mut self, ops: &[Op]) -> Result<()> {
        if self.prefetch_skip > 0 {
            self.prefetch_skip -= 1;
            return Ok(());
        }
        self.keys.resize_with(ops.len(), Vec::new);
        for (op, key) in ops.iter().zip(&mut self.keys) {
            let n = match *op {
                Op::Read { key, .. }
                | Op::Update { key, .. }
                | Op::ReadModifyWrite { key, .. }
                | Op::Insert { key } => key,
                Op::Scan { start, .. } => start,
            };
            build_key(self.spec, n, key);
        }
        // Reading ahead walks each key's path once more: where a batch found everything
        // in memory, the next ones skip it, for twice as many batches each time up to
        // PREFETCH_SKIP_BATCHES_MAX (a batch that reads something resets it).
        if self.tree.prefetch(&self.keys[..ops.len()])? == 0 {
            self.prefetch_backoff = (self.prefetch_backoff * 2).clamp(1, PREFETCH_SKIP_BATCHES_MAX);
            self.prefetch_skip = self.prefetch_backoff;
        } else {
            self.prefetch_backoff = 0;
        }
        Ok(())
    }

    #[inline]
    fn execute(&mut self, op: Op) -> Result<Done> {
        let found = execute(
            self.tree,
            self.spec,
            self.keyspace,
            op,
            &mut self.key,
            &mut self.value,
            &mut self.out,
            &mut self.rng,
        )?;
        Ok(Done { found, commit_ticks: None })
    }
}

/// Runs one operation; false if its key was missing. `out` holds a record
/// ([`YcsbSpec::record_length_bytes`]); `value` is scratch space.
///
/// # Errors
/// The engine's; a record that is not laid out as the workload lays records out; with
/// `dataintegrity`, a read whose bytes are not the values written.
#[allow(clippy::too_many_arguments)]
#[inline]
pub fn execute<S: PageSource>(
    tree: &BTree<'_, S>,
    spec: &YcsbSpec,
    keyspace: &KeySpace,
    op: Op,
    key: &mut Vec<u8>,
    value: &mut Vec<u8>,
    out: &mut [u8],
    rng: &mut impl rand::Rng,
) -> Result<bool> {
    Ok(match op {
        Op::Read { key: n, field } => {
            build_key(spec, n, key);
            read(tree, spec, key, field, out)?
        }
        Op::Update { key: n, field } => {
            build_key(spec, n, key);
            update(tree, spec, key, field, value, out, rng)?
        }
        Op::ReadModifyWrite { key: n, field } => {
            build_key(spec, n, key);
            let read_field = if spec.read_all_fields() { None } else { field };
            read(tree, spec, key, read_field, out)? && update(tree, spec, key, field, value, out, rng)?
        }
        Op::Insert { key: n } => {
            build_key(spec, n, key);
            build_record(spec, key, rng, value);
            let r = tree.insert(key, value);
            keyspace.acknowledge_insert(n);
            r?;
            true
        }
        Op::Scan { start, len, field } => {
            build_key(spec, start, key);
            let mut seen = 0u32;
            let mut malformed = None;
            tree.scan(key, |k, v| {
                let bytes = match field {
                    None => Some(v),
                    Some(f) if !spec.field_lengths_vary() => {
                        let r = field_range(spec, f);
                        v.get(r.start.min(v.len())..r.end.min(v.len()))
                    }
                    Some(f) => record_field(spec, v, f),
                };
                match bytes {
                    Some(b) if b.len() <= out.len() => out[..b.len()].copy_from_slice(b),
                    _ => {
                        malformed = Some(k.to_vec());
                        return false;
                    }
                }
                seen += 1;
                seen < len
            })?;
            if let Some(k) = malformed {
                bail!("record {} is not laid out as {} lays records out", String::from_utf8_lossy(&k), spec.origin());
            }
            seen > 0
        }
    })
}

/// Reads field `field` (`None`: all) of the record `key` into `out`; false if it is
/// missing. With constant field lengths only the field is read; else the record, from
/// which the field is picked. With `dataintegrity` the bytes are checked.
pub(super) fn read<S: PageSource>(
    tree: &BTree<'_, S>,
    spec: &YcsbSpec,
    key: &[u8],
    field: Option<u32>,
    out: &mut [u8],
) -> Result<bool> {
    let length = if !spec.field_lengths_vary() {
        let range = match field {
            Some(f) => field_range(spec, f),
            None => 0..spec.record_length_bytes(),
        };
        tree.read_into(key, range, out)?.map(Some)
    } else {
        tree.get(key, |v| {
            let bytes = match field {
                Some(f) => record_field(spec, v, f)?,
                None => v,
            };
            out.get_mut(..bytes.len())?.copy_from_slice(bytes);
            Some(bytes.len())
        })?
    };
    match length {
        None => Ok(false),
        Some(None) => bail!("record {} is not laid out as {} lays records out", lossy(key), spec.origin()),
        Some(Some(n)) => {
            if !verify_record(spec, key, field, &out[..n]) {
                bail!(
                    "dataintegrity: record {} {} read back other bytes than were written",
                    lossy(key),
                    field.map_or("(all fields)".to_owned(), |f| format!("field {}", spec.field_name(f)))
                );
            }
            Ok(true)
        }
    }
}

pub(super) fn lossy(key: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(key)
}

/// Writes field `field` anew (in place with constant field lengths; else the record
/// with the field replaced), or the whole record for `None`; false if `key` is missing.
/// `record` is scratch space for the record read.
pub(super) fn update<S: PageSource>(
    tree: &BTree<'_, S>,
    spec: &YcsbSpec,
    key: &[u8],
    field: Option<u32>,
    value: &mut Vec<u8>,
    record: &mut [u8],
    rng: &mut impl rand::Rng,
) -> Result<bool> {
    Ok(match field {
        None => {
            build_record(spec, key, rng, value);
            tree.update(key, value)?
        }
        Some(f) if !spec.field_lengths_vary() => {
            new_field_value(spec, key, f, rng, value);
            tree.update_in_place(key, field_range(spec, f).start, value)?
        }
        Some(f) => {
            let Some(n) = tree.get(key, |v| {
                record[..v.len()].copy_from_slice(v);
                v.len()
            })?
            else {
                return Ok(false);
            };
            if !replace_field(spec, key, &record[..n], f, rng, value) {
                bail!("record {} is not laid out as {} lays records out", lossy(key), spec.origin());
            }
            tree.update(key, value)?
        }
    })
}

/// Fills `value` with new printable bytes for field `f`; returns the field's offset.
pub fn new_field(spec: &YcsbSpec, f: u32, value: &mut Vec<u8>, rng: &mut impl rand::Rng) -> usize {
    let r = field_range(spec, f);
    value.resize(r.len(), 0);
    tierdb_workload::ycsb::fill_printable(rng, value);
    r.start
}
