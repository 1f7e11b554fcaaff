//! What this machine offers the device layer: flush instructions, `O_DIRECT`,
//! DAX/`MAP_SYNC`, huge pages, NUMA nodes. Every answer comes from trying or asking
//! the kernel, not from assumptions.

#![allow(unsafe_code)]

use std::fs::OpenOptions;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::aligned::AlignedBuf;
use super::mapping::Mapping;
use super::numa::{self, NumaNode};
use super::persist::{self, CpuCaps, FlushInstruction};
use crate::limits::IO_ALIGN_BYTES;

/// A yes/no answer with the reason or detail behind it.
#[derive(Clone, Debug, Serialize)]
pub struct Capability {
    /// The feature worked when tried.
    pub available: bool,
    /// Why not, or what "available" means here (e.g. tmpfs accepts `O_DIRECT` but
    /// serves it from RAM).
    pub note: String,
}

/// What one directory's file system supports.
#[derive(Clone, Debug, Serialize)]
pub struct PathProbe {
    /// The directory probed.
    pub path: PathBuf,
    /// Its file system type ("tmpfs", "ext4", ...; see `fs_type_of`).
    pub file_system: String,
    /// Whether an aligned `O_DIRECT` write and read of a scratch file went through.
    pub o_direct: Capability,
    /// Whether the kernel granted a `MAP_SYNC` mapping of a scratch file (DAX).
    pub map_sync: Capability,
}

/// The machine as the device layer sees it.
#[derive(Clone, Debug, Serialize)]
pub struct MachineProbe {
    /// The flush instructions CPUID reports.
    pub cpu: CpuCaps,
    /// The flush instruction NVM regions use by default ([`persist::best`]).
    pub flush_chosen: FlushInstruction,
    /// The calibrated time-stamp counter rate, ticks per nanosecond.
    pub tsc_ticks_per_ns: f64,
    /// The kernel's transparent-huge-page setting as sysfs prints it (the chosen one in
    /// brackets, e.g. `always [madvise] never`); `unavailable` without sysfs.
    pub transparent_huge_pages: String,
    /// Pages reserved in the hugetlb pool (`HugePages_Total` of /proc/meminfo); 0 if
    /// unreadable.
    pub hugetlb_pages_total: u64,
    /// One probe per directory asked for, in the order given.
    pub paths: Vec<PathProbe>,
    /// The machine's NUMA nodes (empty where sysfs has none).
    pub numa_nodes: Vec<NumaNode>,
}

/// Probes the CPU, memory and each directory in `dirs`.
pub fn probe(dirs: &[PathBuf]) -> MachineProbe {
    MachineProbe {
        cpu: persist::cpu_caps(),
        flush_chosen: persist::best(),
        tsc_ticks_per_ns: super::clock::rate().ticks_per_ns,
        transparent_huge_pages: std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "unavailable".into()),
        hugetlb_pages_total: meminfo_value("HugePages_Total:").unwrap_or(0),
        paths: dirs.iter().map(|d| probe_dir(d)).collect(),
        numa_nodes: numa::nodes(),
    }
}

fn meminfo_value(key: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    text.lines().find(|l| l.starts_with(key))?.split_whitespace().nth(1)?.parse().ok()
}

/// Tries `O_DIRECT` and `MAP_SYNC` on a scratch file in `dir` (removed afterwards).
pub fn probe_dir(dir: &Path) -> PathProbe {
    let file_system = fs_type_of(dir);
    let scratch = dir.join(format!(".tierdb-probe-{}", std::process::id()));
    let o_direct = try_o_direct(&scratch, &file_system);
    let map_sync = try_map_sync(&scratch, &file_system);
    let _ = std::fs::remove_file(&scratch);
    PathProbe { path: dir.to_path_buf(), file_system, o_direct, map_sync }
}

fn try_o_direct(scratch: &Path, fs: &str) -> Capability {
    let no = |note: String| Capability { available: false, note };
    let file = match OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_DIRECT)
        .open(scratch)
    {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            return no(format!("{fs} refuses O_DIRECT"));
        }
        Err(e) => return no(format!("cannot create a scratch file: {e}")),
    };
    let mut buf = AlignedBuf::new(IO_ALIGN_BYTES);
    buf[..4].copy_from_slice(b"tier");
    let mut back = AlignedBuf::new(IO_ALIGN_BYTES);
    match file.write_all_at(&buf, 0).and_then(|()| file.read_exact_at(&mut back, 0)) {
        Ok(()) if back[..4] == *b"tier" => Capability {
            available: true,
            note: if fs == "tmpfs" {
                "accepted, but tmpfs serves it from RAM".into()
            } else {
                format!("aligned {IO_ALIGN_BYTES}-byte write and read went through")
            },
        },
        Ok(()) => no("read back other bytes than written".into()),
        Err(e) => no(format!("aligned I/O failed: {e}")),
    }
}

fn try_map_sync(scratch: &Path, fs: &str) -> Capability {
    let file = match OpenOptions::new().read(true).write(true).create(true).truncate(true).open(scratch) {
        Ok(f) => f,
        Err(e) => {
            return Capability { available: false, note: format!("cannot create a scratch file: {e}") };
        }
    };
    if let Err(e) = file.set_len(IO_ALIGN_BYTES as u64) {
        return Capability { available: false, note: format!("cannot size a scratch file: {e}") };
    }
    match Mapping::file(&file, IO_ALIGN_BYTES, true) {
        Ok((_, true)) => Capability { available: true, note: "DAX: flushed stores are durable without msync".into() },
        Ok((_, false)) => Capability {
            available: false,
            note: if fs == "tmpfs" {
                "not DAX: tmpfs is RAM; data outlives a process crash, not a reboot".into()
            } else {
                format!("{fs} is not mounted DAX: persists add msync for durability")
            },
        },
        Err(e) => Capability { available: false, note: format!("mmap failed: {e}") },
    }
}

/// The file system type of `path` (or of its nearest existing ancestor).
pub fn fs_type_of(path: &Path) -> String {
    let mut p = path;
    while !p.exists() {
        match p.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => p = parent,
            _ => {
                p = Path::new(".");
                break;
            }
        }
    }
    let Ok(c) = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()) else {
        return "unknown".into();
    };
    // SAFETY: statfs writes into the zeroed struct we own; the path is NUL-terminated.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return "unknown".into();
    }
    #[allow(clippy::unnecessary_cast)]
    match st.f_type as i64 {
        0x0102_1994 => "tmpfs",
        0xEF53 => "ext4",
        0x5846_5342 => "xfs",
        0x9123_683E => "btrfs",
        0x794C_7630 => "overlayfs",
        0x6969 => "nfs",
        0x2FC1_2FC1 => "zfs",
        0x0102_1997 => "9p",
        0x6573_5546 => "fuse",
        other => return format!("fs 0x{other:x}"),
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_shm_and_tmp() {
        let p = probe(&["/dev/shm".into(), std::env::temp_dir()]);
        assert!(p.cpu.clflush);
        assert!(p.flush_chosen.supported());
        assert_eq!(p.paths[0].file_system, "tmpfs");
        assert!(!p.paths[0].map_sync.available, "tmpfs is not DAX");
        assert!(p.tsc_ticks_per_ns > 0.0);
        assert!(!p.numa_nodes.is_empty());
        assert!(!Path::new("/dev/shm").join(format!(".tierdb-probe-{}", std::process::id())).exists());
    }

    #[test]
    fn fs_type_of_a_missing_path_uses_its_parent() {
        assert_eq!(fs_type_of(Path::new("/dev/shm/does/not/exist")), "tmpfs");
    }
}
