//! Recording an engine's page accesses as a trace: a [`TraceRecorder`] installed in a
//! buffer manager (`BufferManager::set_recorder`) appends a record per access.
//!
//! Records are kept in memory behind a mutex (16–40 bytes each) and written when the
//! run is over ([`TraceRecorder::save`]), so recording adds no I/O to the measured run;
//! the order is the order in which threads took the mutex. Thread ids are recorded as
//! the order in which threads first appeared.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;
use std::thread::ThreadId;
use std::time::Instant;

use tierdb::ids::PageId;
use tierdb::recorder::{AccessKind, AccessRecorder};

use crate::error::TraceError;
use crate::trace::{self, Header, Marker, Op, Record, Trace};

#[derive(Default)]
struct State {
    records: Vec<Record>,
    threads: HashMap<ThreadId, u32>,
}

/// Collects a trace from a running engine.
pub struct TraceRecorder {
    header: Header,
    start: Instant,
    state: Mutex<State>,
}

impl TraceRecorder {
    /// An empty recorder for an engine of `page_size_bytes`-byte pages; `source` goes
    /// into the trace's header. Time stamps count from this call.
    pub fn new(page_size_bytes: u32, source: impl Into<String>) -> TraceRecorder {
        TraceRecorder {
            header: Header { page_size_bytes, source: source.into() },
            start: Instant::now(),
            state: Mutex::new(State::default()),
        }
    }

    fn push(&self, mut r: Record) {
        let t = self.start.elapsed().as_nanos() as u64;
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let next = s.threads.len() as u32;
        r.thread = Some(*s.threads.entry(std::thread::current().id()).or_insert(next));
        r.time_ns = Some(t);
        s.records.push(r);
    }

    /// The trace recorded so far.
    pub fn trace(&self) -> Trace {
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        Trace { header: self.header.clone(), records: s.records.clone() }
    }

    /// Writes the trace recorded so far to `path` (binary, or text for `.txt`).
    ///
    /// # Errors
    /// I/O errors.
    pub fn save(&self, path: &Path) -> Result<usize, TraceError> {
        let t = self.trace();
        trace::save(&t, path)?;
        Ok(t.records.len())
    }
}

impl AccessRecorder for TraceRecorder {
    fn access(&self, kind: AccessKind, pid: PageId) {
        let op = match kind {
            AccessKind::Read => Op::Read,
            AccessKind::Write => Op::Write,
            AccessKind::ReadLines => Op::ReadLines,
            AccessKind::WriteLines => Op::WriteLines,
            AccessKind::Alloc => Op::Alloc,
            AccessKind::Free => Op::Free,
        };
        self.push(Record::access(op, pid.0));
    }

    fn marker(&self, name: &'static str) {
        if let Some(m) = Marker::from_name(name) {
            self.push(Record::marker(m));
        }
    }
}
