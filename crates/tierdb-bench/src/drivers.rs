//! The workload drivers: YCSB straight on a B+-tree ([`ycsb`], also the epochs of the
//! tuning experiments), YCSB through a database's transactions ([`ycsb_txn`]) and the
//! TPC-C run loop ([`tpcc`]). Each loads, warms up, runs the measured phase on N threads
//! and reports; none prints.

pub mod tpcc;
pub mod ycsb;
pub mod ycsb_txn;
