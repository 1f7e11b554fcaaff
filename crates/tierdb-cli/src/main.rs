//! The `tierdb` command line.
//!
//! Errors from the engine arrive typed and are printed with their causes; any error
//! exits with status 1 (argument errors: 2, from clap).

#![forbid(unsafe_code)]

mod device_bench;
mod devices;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "tierdb", version, about = "A storage engine for DRAM, NVM/CXL memory and SSD")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Inspect and measure the devices: DRAM arena, NVM region, SSD page file.
    Devices {
        #[command(subcommand)]
        command: devices::DevicesCommand,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Devices { command } => devices::run(command),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
