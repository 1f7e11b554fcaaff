//! NUMA nodes: which exist, and binding a mapping's memory to one (`mbind`).
//!
//! CXL memory appears to Linux as a NUMA node without CPUs; binding the NVM region to
//! that node makes the NVM tier real CXL memory. The same call binds to an ordinary
//! node, which is how it is tested here (node 0).

#![allow(unsafe_code)]

use std::path::Path;

use serde::Serialize;

use super::DeviceError;

const NODE_DIR: &str = "/sys/devices/system/node";
/// Highest node id we accept (the size of our node mask in bits).
const NODE_ID_MAX: u32 = 1023;
const MPOL_MF_STRICT: libc::c_uint = 1;
const MPOL_MF_MOVE: libc::c_uint = 2;
const MPOL_F_NODE: libc::c_int = 1;
const MPOL_F_ADDR: libc::c_int = 2;

/// One NUMA node as sysfs describes it.
#[derive(Clone, Debug, Serialize)]
pub struct NumaNode {
    /// The node's number (`nodeN` in sysfs).
    pub id: u32,
    /// CPU list as sysfs prints it (e.g. "0-1"); empty for a memory-only node.
    pub cpus: String,
    /// Memory the node holds (`MemTotal` of its sysfs `meminfo`); 0 if unreadable.
    pub memory_total_bytes: u64,
}

impl NumaNode {
    /// A memory-only node: what CXL expanders look like.
    pub fn cpu_less(&self) -> bool {
        self.cpus.trim().is_empty()
    }
}

/// The machine's NUMA nodes (empty where sysfs has none).
pub fn nodes() -> Vec<NumaNode> {
    let Ok(dir) = std::fs::read_dir(NODE_DIR) else {
        return Vec::new();
    };
    let mut out: Vec<NumaNode> = dir
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let id: u32 = name.strip_prefix("node")?.parse().ok()?;
            let cpus = std::fs::read_to_string(e.path().join("cpulist")).unwrap_or_default().trim().to_string();
            let memory_total_bytes = meminfo_total(&e.path().join("meminfo")).unwrap_or(0);
            Some(NumaNode { id, cpus, memory_total_bytes })
        })
        .collect();
    out.sort_by_key(|n| n.id);
    out
}

fn meminfo_total(path: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    let line = text.lines().find(|l| l.contains("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().rev().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Binds `[addr, addr + len)` to `node` (MPOL_BIND, moving pages already there).
pub(crate) fn bind(addr: *mut u8, len: usize, node: u32) -> Result<(), DeviceError> {
    let known = nodes();
    if node > NODE_ID_MAX || !known.iter().any(|n| n.id == node) {
        let ids: Vec<String> = known.iter().map(|n| n.id.to_string()).collect();
        return Err(DeviceError::Numa {
            node,
            reason: format!(
                "no such node (this machine has: {})",
                if ids.is_empty() { "none".into() } else { ids.join(", ") }
            ),
        });
    }
    let mut mask = [0u64; (NODE_ID_MAX as usize + 1) / 64];
    mask[node as usize / 64] |= 1 << (node % 64);
    // SAFETY: mbind only changes the placement policy of our own mapping; the mask
    // array outlives the call and maxnode matches its size in bits.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mbind,
            addr,
            len,
            libc::MPOL_BIND,
            mask.as_ptr(),
            (mask.len() * 64) as libc::c_ulong,
            MPOL_MF_MOVE | MPOL_MF_STRICT,
        )
    };
    if rc != 0 {
        return Err(DeviceError::Numa { node, reason: format!("mbind: {}", std::io::Error::last_os_error()) });
    }
    Ok(())
}

/// The node holding the (already touched) page at `addr`.
pub(crate) fn node_of(addr: *const u8) -> std::io::Result<u32> {
    let mut node: libc::c_int = -1;
    // SAFETY: with MPOL_F_NODE | MPOL_F_ADDR the kernel writes one int to `node` and
    // reads nothing else; a null mask with maxnode 0 is allowed.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_get_mempolicy,
            &mut node as *mut libc::c_int,
            std::ptr::null_mut::<libc::c_ulong>(),
            0 as libc::c_ulong,
            addr,
            MPOL_F_NODE | MPOL_F_ADDR,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    u32::try_from(node).map_err(|_| std::io::Error::other(format!("kernel returned node {node}")))
}
