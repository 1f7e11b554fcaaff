//! Reads and writes with several in flight: a batch of transfers at different offsets
//! of one file goes to the kernel in one io_uring submission, so the device serves them
//! at its queue depth instead of one `pread`/`pwrite` after another.
//!
//! Each call takes an idle ring from a small pool (or sets one up), and does not return
//! before every transfer it submitted has completed: the buffers it was given are then
//! no longer used by the kernel. Where io_uring cannot be set up (an old kernel, a
//! sandbox that forbids it) [`Rings::write_all`] and [`Rings::read_all`] say so and the
//! caller does the batch itself, one transfer after another.
#![allow(unsafe_code)]

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};

use io_uring::{IoUring, opcode, types};
use parking_lot::Mutex;

use crate::limits::SSD_WRITES_IN_FLIGHT_MAX;

/// Idle rings of one file's readers and writers.
pub(crate) struct Rings {
    idle: Mutex<Vec<IoUring>>,
    unavailable: AtomicBool,
}

/// One transfer of a batch: `len` bytes at `ptr` to or from `offset` of the file.
#[derive(Clone, Copy)]
struct Transfer {
    offset: u64,
    ptr: *mut u8,
    len: usize,
}

impl Rings {
    /// No ring yet: the first batch sets one up.
    pub(crate) fn new() -> Rings {
        Rings { idle: Mutex::new(Vec::new()), unavailable: AtomicBool::new(false) }
    }

    /// Writes each `(offset, bytes)` of `writes` to `file` in full, at most
    /// [`SSD_WRITES_IN_FLIGHT_MAX`] in flight at once; a short write goes on from where
    /// it stopped. `None` if io_uring is not available (nothing was written); else the
    /// first error, after every write submitted has completed (the others may have
    /// reached the file).
    pub(crate) fn write_all(&self, file: &File, writes: &[(u64, &[u8])]) -> Option<io::Result<()>> {
        // The kernel only reads through these pointers (a write).
        let t: Vec<Transfer> =
            writes.iter().map(|(o, b)| Transfer { offset: *o, ptr: b.as_ptr().cast_mut(), len: b.len() }).collect();
        self.run(file, &t, false)
    }

    /// Reads each `(offset, buffer)` of `reads` from `file` in full, at most
    /// [`SSD_WRITES_IN_FLIGHT_MAX`] in flight at once; a short read goes on from where
    /// it stopped, and one that meets the end of the file is an `UnexpectedEof` error.
    /// `None` if io_uring is not available (nothing was read); else the first error,
    /// after every read submitted has completed (the buffers then hold what arrived).
    pub(crate) fn read_all(&self, file: &File, reads: &mut [(u64, &mut [u8])]) -> Option<io::Result<()>> {
        let t: Vec<Transfer> =
            reads.iter_mut().map(|(o, b)| Transfer { offset: *o, ptr: b.as_mut_ptr(), len: b.len() }).collect();
        self.run(file, &t, true)
    }

    /// The batch `t` (reads if `read`, else writes), in chunks of at most a ring's size.
    /// Every pointer of `t` stays valid for its length until this returns: the callers
    /// borrow the buffers for the whole call.
    fn run(&self, file: &File, t: &[Transfer], read: bool) -> Option<io::Result<()>> {
        if self.unavailable.load(Ordering::Relaxed) {
            return None;
        }
        let ring = self.idle.lock().pop();
        let mut ring = match ring {
            Some(r) => r,
            None => match IoUring::new(SSD_WRITES_IN_FLIGHT_MAX as u32) {
                Ok(r) => r,
                Err(_) => {
                    self.unavailable.store(true, Ordering::Relaxed);
                    return None;
                }
            },
        };
        let fd = types::Fd(file.as_raw_fd());
        let mut done = vec![0usize; t.len()];
        let mut first_error = None;
        // An empty transfer has nothing to do (and would read as an end of file).
        let all: Vec<usize> = (0..t.len()).filter(|&i| t[i].len > 0).collect();
        for chunk in all.chunks(SSD_WRITES_IN_FLIGHT_MAX) {
            let mut pending: Vec<usize> = chunk.to_vec();
            while !pending.is_empty() && first_error.is_none() {
                match submit_and_reap(&mut ring, fd, t, read, &mut done, &pending) {
                    Ok(short) => pending = short,
                    Err(e) => first_error = Some(e),
                }
            }
        }
        match first_error {
            None => {
                self.idle.lock().push(ring);
                Some(Ok(()))
            }
            // Dropped, not reused: a submission the kernel refused may still sit in it.
            Some(e) => Some(Err(e)),
        }
    }
}

/// Submits the rest of each transfer of `pending` (`done[i]` bytes of transfer `i` are
/// done) and waits for all of them; returns the transfers that came back short.
fn submit_and_reap(
    ring: &mut IoUring,
    fd: types::Fd,
    t: &[Transfer],
    read: bool,
    done: &mut [usize],
    pending: &[usize],
) -> io::Result<Vec<usize>> {
    debug_assert!(
        pending.len() <= SSD_WRITES_IN_FLIGHT_MAX,
        "{} transfers for a ring of {SSD_WRITES_IN_FLIGHT_MAX}",
        pending.len()
    );
    {
        let mut sq = ring.submission();
        for &i in pending {
            let Transfer { offset, ptr, len } = t[i];
            debug_assert!(done[i] < len, "transfer {i}: {} of {len} bytes done, yet pending", done[i]);
            let rest = u32::try_from(len - done[i]).expect("a transfer of less than 4 GiB");
            // SAFETY: `done[i] < len`, so the pointer stays inside the caller's buffer.
            let at = unsafe { ptr.add(done[i]) };
            let pos = offset + done[i] as u64;
            let entry = if read {
                opcode::Read::new(fd, at, rest).offset(pos).build()
            } else {
                opcode::Write::new(fd, at, rest).offset(pos).build()
            };
            // SAFETY: the buffer behind `at` is the caller's, borrowed for the whole
            // call (`Rings::run`), and this function returns only after every entry
            // pushed here has completed (or, if the kernel took none of them, after
            // dropping them unsubmitted).
            unsafe { sq.push(&entry.user_data(i as u64)) }
                .expect("a ring of SSD_WRITES_IN_FLIGHT_MAX entries holds a chunk");
        }
    }
    let n = pending.len();
    let (mut reaped, mut short, mut error) = (0, Vec::new(), None);
    while reaped < n {
        if let Err(e) = ring.submit_and_wait(n - reaped) {
            let retry = matches!(e.raw_os_error(), Some(libc::EINTR) | Some(libc::EAGAIN) | Some(libc::EBUSY));
            if !retry {
                if reaped == 0 && ring.submission().len() == n {
                    // The kernel took none of them: nothing refers to the buffers (the
                    // caller drops the ring with them unsubmitted).
                    return Err(e);
                }
                // Transfers in flight on the caller's buffers that can no longer be
                // waited for: returning would free memory the kernel may still use.
                eprintln!("tierdb: io_uring wait failed with transfers in flight: {e}");
                std::process::abort();
            }
        }
        for cqe in ring.completion() {
            reaped += 1;
            let i = cqe.user_data() as usize;
            match cqe.result() {
                r if r < 0 => {
                    error.get_or_insert_with(|| io::Error::from_raw_os_error(-r));
                }
                0 if read => {
                    error.get_or_insert_with(|| {
                        io::Error::new(io::ErrorKind::UnexpectedEof, "a read met the end of the file")
                    });
                }
                0 => {
                    error.get_or_insert_with(|| io::Error::new(io::ErrorKind::WriteZero, "a write wrote nothing"));
                }
                r => {
                    done[i] += r as usize;
                    if done[i] < t[i].len {
                        short.push(i);
                    }
                }
            }
        }
    }
    match error {
        Some(e) => Err(e),
        None => Ok(short),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::FileExt;

    use super::*;

    #[test]
    fn a_batch_reaches_the_file_at_its_offsets() {
        let d = tempfile::tempdir().unwrap();
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(d.path().join("w"))
            .unwrap();
        let rings = Rings::new();
        let bufs: Vec<Vec<u8>> = (0..(SSD_WRITES_IN_FLIGHT_MAX + 7)).map(|i| vec![i as u8 + 1; 512]).collect();
        // Every other 512-byte block, more writes than one ring holds.
        let writes: Vec<(u64, &[u8])> = bufs.iter().enumerate().map(|(i, b)| ((2 * i * 512) as u64, &b[..])).collect();
        let Some(done) = rings.write_all(&f, &writes) else { return }; // no io_uring here
        done.unwrap();
        for (i, b) in bufs.iter().enumerate() {
            let mut got = vec![0u8; 512];
            f.read_exact_at(&mut got, (2 * i * 512) as u64).unwrap();
            assert_eq!(&got, b, "write {i}");
        }
        // The ring went back to the pool and is used again.
        assert_eq!(rings.idle.lock().len(), 1);
        assert!(rings.write_all(&f, &writes[..2]).unwrap().is_ok());
        assert_eq!(rings.idle.lock().len(), 1);
    }

    #[test]
    fn a_batch_of_reads_fills_each_buffer_from_its_offset() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("r");
        let bytes: Vec<u8> = (0..(SSD_WRITES_IN_FLIGHT_MAX + 9) * 512).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        let f = File::open(&path).unwrap();
        let rings = Rings::new();
        // Every block, in reverse, more reads than one ring holds.
        let n = SSD_WRITES_IN_FLIGHT_MAX + 9;
        let mut bufs: Vec<Vec<u8>> = (0..n).map(|_| vec![0u8; 512]).collect();
        let mut reads: Vec<(u64, &mut [u8])> =
            bufs.iter_mut().enumerate().map(|(i, b)| (((n - 1 - i) * 512) as u64, &mut b[..])).collect();
        let Some(done) = rings.read_all(&f, &mut reads) else { return }; // no io_uring here
        done.unwrap();
        for (i, b) in bufs.iter().enumerate() {
            let at = (n - 1 - i) * 512;
            assert_eq!(&b[..], &bytes[at..at + 512], "read {i}");
        }
        // A read past the end is an error, not a buffer of stale bytes.
        let mut past = vec![0u8; 512];
        let err = rings.read_all(&f, &mut [(bytes.len() as u64, &mut past[..])]).unwrap().unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn an_error_is_returned_after_the_batch() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("r");
        std::fs::write(&path, b"x").unwrap();
        let f = File::open(&path).unwrap(); // read-only: every write fails
        let buf = [7u8; 64];
        let Some(done) = Rings::new().write_all(&f, &[(0, &buf[..]), (4096, &buf[..])]) else { return };
        assert_eq!(done.unwrap_err().raw_os_error(), Some(libc::EBADF));
    }
}
