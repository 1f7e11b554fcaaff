//! The experiments' run logic, apart from the commands' argument parsing and table
//! rendering: the loops that build engines, run workloads and collect measurements.

pub mod crashtest;
pub mod devices;
pub mod drilldown;
pub mod full_scans;
pub mod isolation;
pub mod nvcache_obp;
pub mod nvcache_paper;
pub mod nvcache_phases;
pub mod nvsql;
pub mod restart;
pub mod spitfire;
pub mod tuning;
pub mod wear;
