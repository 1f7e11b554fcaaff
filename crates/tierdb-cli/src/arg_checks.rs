//! Checks of the command line that concern several commands and that clap's
//! declarations cannot express; `main` makes them on the parsed matches before any
//! command runs, and reports a failure as clap reports an argument error (exit 2).
//!
//! `--nvm` is the capacity of an NVM tier. A command that takes it beside `--arch` or
//! `--archs` refuses it when none of the architectures it would run has an NVM tier
//! (`ssd-bm`, `main-memory`): the value would be ignored, and a report of a run that
//! ignored an option reads as if the option had applied. Only a value given on the
//! command line counts (a default is not the user's statement); architectures the
//! user did not name are the command's defaults. Names that do not parse are left to
//! the command, which reports them with its own list.

use clap::ArgMatches;
use clap::parser::ValueSource;
use tierdb::arch::Architecture;

/// The arguments that name the architectures a command runs (one, or a list
/// separated by commas).
const ARCH_ARGS: [&str; 2] = ["arch", "archs"];
/// The NVM capacity.
const NVM_ARG: &str = "nvm";

/// A failed check: the subcommand path it concerns (`["bench", "ycsb"]`) and why.
#[derive(Debug)]
pub struct Refusal {
    pub path: Vec<String>,
    pub message: String,
}

/// Checks the innermost subcommand that `matches` (parsed by `cmd`) selects.
///
/// # Errors
/// The first check that fails.
pub fn check(cmd: &clap::Command, matches: &ArgMatches) -> Result<(), Refusal> {
    let (mut cmd, mut m) = (cmd, matches);
    let mut path = Vec::new();
    while let Some((name, sub)) = m.subcommand() {
        let Some(c) = cmd.find_subcommand(name) else { break };
        path.push(name.to_string());
        (cmd, m) = (c, sub);
    }
    check_nvm(cmd, m).map_err(|message| Refusal { path, message })
}

/// `--nvm` given where no architecture the command runs has an NVM tier.
fn check_nvm(cmd: &clap::Command, m: &ArgMatches) -> Result<(), String> {
    let has = |id: &str| cmd.get_arguments().any(|a| a.get_id() == id);
    if !has(NVM_ARG) || m.value_source(NVM_ARG) != Some(ValueSource::CommandLine) {
        return Ok(());
    }
    let nvm = raw_values(m, NVM_ARG).join(",");
    let mut archs = Vec::new();
    for id in ARCH_ARGS.into_iter().filter(|id| has(id)) {
        for name in raw_values(m, id).iter().flat_map(|v| v.split(',')).map(str::trim) {
            match name.parse::<Architecture>() {
                Ok(a) if !archs.contains(&a) => archs.push(a),
                Ok(_) => {}
                Err(_) => return Ok(()), // the command names the unknown architecture
            }
        }
    }
    if archs.is_empty() || archs.iter().any(|a| a.uses_nvm()) {
        return Ok(());
    }
    Err(nvm_without_tier(&nvm, &archs))
}

fn raw_values(m: &ArgMatches, id: &str) -> Vec<String> {
    m.get_raw(id).map(|vs| vs.map(|v| v.to_string_lossy().into_owned()).collect()).unwrap_or_default()
}

/// The message that refuses `--nvm value` for `archs`, none of which has an NVM tier.
pub fn nvm_without_tier(value: &str, archs: &[Architecture]) -> String {
    debug_assert!(!archs.is_empty() && archs.iter().all(|a| !a.uses_nvm()), "{archs:?}");
    let tiers = |a: &Architecture| if a.uses_ssd() { "DRAM and SSD" } else { "DRAM only" };
    let what = match archs {
        [a] => format!("{a} has no NVM tier ({})", tiers(a)),
        _ => format!("none of {} has an NVM tier", archs.iter().map(|a| a.name()).collect::<Vec<_>>().join(", ")),
    };
    format!(
        "--nvm {value}: {what}, so an NVM capacity would be ignored; drop --nvm, or choose an architecture with NVM"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_names_the_value_the_architecture_and_the_alternatives() {
        let m = nvm_without_tier("4MiB", &[Architecture::SsdBm]);
        assert!(m.contains("--nvm 4MiB") && m.contains("ssd-bm has no NVM tier (DRAM and SSD)"), "{m}");
        let m = nvm_without_tier("1GiB", &[Architecture::SsdBm, Architecture::MainMemory]);
        assert!(m.contains("none of ssd-bm, main-memory has an NVM tier"), "{m}");
    }
}
