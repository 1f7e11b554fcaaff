//! The experiment logic several commands share, apart from their argument parsing and
//! table rendering.

pub mod crashtest;
pub mod devices;
pub mod drilldown;
pub mod full_scans;
pub mod nvcache_obp;
pub mod nvcache_phases;
pub mod nvsql;
pub mod restart;
pub mod spitfire;
pub mod tuning;
pub mod wear;
