//! The environment a report names: the machine it was made on. (The run's own
//! settings — emulation mode, device profiles, sizes, threads, seed — are the
//! [`crate::harness::Setup`] every report embeds.)

use serde::Serialize;

/// The machine the report was made on.
#[derive(Serialize)]
pub struct Machine {
    pub cpu: String,
    pub logical_cpus: usize,
    pub kernel: String,
}

impl Machine {
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
}
