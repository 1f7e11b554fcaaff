//! The environment a report names: the machine it was made on ([`Machine`]), and the
//! header line the engine experiments' reports share ([`devices_line`]: emulation mode,
//! device profiles, sizes, threads, seed — from the [`crate::harness::Setup`] every
//! report embeds).

use serde::Serialize;
use tierdb::ByteSize;

use crate::harness::Setup;

/// The machine the report was made on.
#[derive(Serialize)]
pub struct Machine {
    /// The CPU's model name.
    pub cpu: String,
    /// Logical CPUs.
    pub logical_cpus: usize,
    /// The operating system and kernel release.
    pub kernel: String,
}

impl Machine {
    /// The machine this process runs on (`unknown` where `/proc` does not say).
    pub fn probe() -> Machine {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|t| {
                t.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|r| format!("{} {}", std::env::consts::OS, r.trim()))
            .unwrap_or_else(|_| std::env::consts::OS.into());
        Machine { cpu, logical_cpus: std::thread::available_parallelism().map_or(0, |n| n.get()), kernel }
    }

    /// `<cpu> (<n> CPUs)`, as a report's header names the machine.
    pub fn label(&self) -> String {
        format!("{} ({} CPUs)", self.cpu, self.logical_cpus)
    }
}

/// The part of a report's header every engine experiment shares: `mode <mode> ·
/// profiles dram <p>, nvm <p>, ssd <p> · DRAM <size> · NVM <size> · data <size> · page
/// <size> · <n> thread(s) · seed <s>`. `mode` is the mode as the command names it
/// ([`Setup::mode_label`], or the bare mode).
pub fn devices_line(setup: &Setup, mode: &str, dram_bytes: u64, nvm_bytes: u64, data_bytes: u64) -> String {
    format!(
        "mode {mode} · profiles dram {}, nvm {}, ssd {} · DRAM {} · NVM {} · data {} · page {} · {} thread(s) · seed {}",
        setup.dram_profile.name,
        setup.nvm_profile.name,
        setup.ssd_profile.name,
        ByteSize(dram_bytes),
        ByteSize(nvm_bytes),
        ByteSize(data_bytes),
        ByteSize(setup.page_size_bytes as u64),
        setup.threads,
        setup.seed,
    )
}
