//! Engine files of the runs in flight: removed when a run ends (also on its error
//! paths, by [`Cleanup`]'s drop) and by the Ctrl-C handler if the process is
//! interrupted (an NVM pool on /dev/shm holds RAM until someone deletes it).
//!
//! Concurrency: the list of live files is one mutex, taken by a [`Cleanup`] when it is
//! made and dropped and by the interrupt handler; a poisoned lock is used as it is.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{Context, Result};

/// Engine files that exist now, removed by the Ctrl-C handler if the run is
/// interrupted (an NVM pool on /dev/shm holds RAM until someone deletes it).
static LIVE_FILES: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Installs the handler that removes the engine's files on Ctrl-C / SIGTERM, then exits
/// with status 130.
///
/// # Errors
/// A handler was installed already.
pub fn remove_files_on_interrupt() -> Result<()> {
    ctrlc::set_handler(|| {
        let files = std::mem::take(&mut *LIVE_FILES.lock().unwrap_or_else(|e| e.into_inner()));
        for p in &files {
            remove_quietly(p);
        }
        eprintln!("\ninterrupted: removed {} engine file(s)", files.len());
        std::process::exit(130);
    })
    .context("installing the Ctrl-C handler")
}

/// Removes files and directories (with their contents) when dropped (also on error
/// paths), and on Ctrl-C meanwhile.
pub struct Cleanup(Vec<PathBuf>);

impl Cleanup {
    pub fn new(files: Vec<PathBuf>) -> Cleanup {
        LIVE_FILES.lock().unwrap_or_else(|e| e.into_inner()).extend(files.iter().cloned());
        Cleanup(files)
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        LIVE_FILES.lock().unwrap_or_else(|e| e.into_inner()).retain(|p| !self.0.contains(p));
        for p in &self.0 {
            remove_quietly(p);
        }
    }
}

fn remove_quietly(p: &Path) {
    let removed = if p.is_dir() {
        std::fs::remove_dir_all(p)
    } else if p.exists() {
        std::fs::remove_file(p)
    } else {
        Ok(())
    };
    if let Err(e) = removed {
        eprintln!("warning: could not remove {}: {e}", p.display());
    }
}
