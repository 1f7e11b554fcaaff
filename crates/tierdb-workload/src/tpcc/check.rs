//! The consistency conditions of TPC-C §3.3.2, checked by scanning the trees.
//!
//! | # | condition (per warehouse or district) |
//! |---|---|
//! | 1 | W_YTD = Σ D_YTD of its districts |
//! | 2 | D_NEXT_O_ID − 1 = max(O_ID) = max(NO_O_ID) |
//! | 3 | max(NO_O_ID) − min(NO_O_ID) + 1 = number of new-order rows |
//! | 4 | Σ O_OL_CNT = number of order lines |
//! | 5 | O_CARRIER_ID is null exactly for the orders with a new-order row |
//! | 6 | every order has O_OL_CNT lines |
//!
//! and of the secondary indexes: every order has its `order_customer` entry and every
//! customer its `customer_name` entry, with nothing else in them.

use std::collections::BTreeMap;

use serde::Serialize;

use super::rows::{Customer, District, Order, OrderLine, Warehouse};
use super::{Table, TpccTx, TxError, keys};

/// Violations listed at most (the count is complete).
const VIOLATIONS_LISTED_MAX: usize = 20;

/// The outcome of a check.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ConsistencyReport {
    /// Warehouse rows scanned.
    pub warehouses: u64,
    /// Districts seen: in the district table or in the key of an order, new-order,
    /// order-line or `order_customer` entry.
    pub districts: u64,
    /// Order rows scanned.
    pub orders: u64,
    /// New-order rows scanned.
    pub new_orders: u64,
    /// Order-line rows scanned.
    pub order_lines: u64,
    /// Violations per condition 1..=6, then index violations (position 6).
    pub violations_by_condition: [u64; 7],
    /// The first violations, described.
    pub violations: Vec<String>,
}

impl ConsistencyReport {
    /// True if no condition and no index is violated.
    pub fn ok(&self) -> bool {
        self.violations_by_condition.iter().all(|&n| n == 0)
    }

    fn violate(&mut self, condition: usize, what: String) {
        self.violations_by_condition[condition - 1] += 1;
        if self.violations.len() < VIOLATIONS_LISTED_MAX {
            self.violations.push(format!("condition {condition}: {what}"));
        }
    }
}

#[derive(Default)]
struct DistrictFacts {
    ytd: i64,
    next_o_id: u32,
    max_o: u32,
    ol_cnt_sum: u64,
    lines: u64,
    /// Orders without a carrier, and the new-order rows, in order.
    undelivered: Vec<u32>,
    new_orders: Vec<u32>,
    orders: BTreeMap<u32, (u8, u32)>, // o → (ol_cnt, lines found)
    order_index: u64,
    order_index_bad: u64,
}

fn scan_all<T: TpccTx>(tx: &mut T, table: Table, f: &mut dyn FnMut(&[u8], &[u8])) -> Result<(), TxError<T::Error>> {
    tx.scan(table, &[], &mut |k, v| {
        f(k, v);
        true
    })
    .map_err(TxError::Engine)
}

fn district_of(k: &[u8]) -> Option<(u32, u8)> {
    Some((u32::from_be_bytes(k.get(0..4)?.try_into().ok()?), *k.get(4)?))
}

/// Checks conditions 1–6 and the indexes over the whole database in `tx` (a read-only
/// transaction: run it while nothing else runs).
///
/// # Errors
/// The store's; `Corrupt` for a row that does not decode.
pub fn check_consistency<T: TpccTx>(tx: &mut T) -> Result<ConsistencyReport, TxError<T::Error>> {
    let mut rep = ConsistencyReport::default();
    let mut corrupt: Option<(Table, Vec<u8>, usize)> = None;
    let mut bad = |t: Table, k: &[u8], v: &[u8]| {
        corrupt.get_or_insert((t, k.to_vec(), v.len()));
    };
    let mut wh: BTreeMap<u32, i64> = BTreeMap::new();
    scan_all(
        tx,
        Table::Warehouse,
        &mut |k, v| match (k.try_into().ok().map(u32::from_be_bytes), Warehouse::decode(v)) {
            (Some(w), Some(row)) => {
                wh.insert(w, row.ytd_cents);
            }
            _ => bad(Table::Warehouse, k, v),
        },
    )?;
    let mut ds: BTreeMap<(u32, u8), DistrictFacts> = BTreeMap::new();
    scan_all(tx, Table::District, &mut |k, v| match (district_of(k), District::decode(v)) {
        (Some(wd), Some(row)) => {
            let f = ds.entry(wd).or_default();
            f.ytd = row.ytd_cents;
            f.next_o_id = row.next_o_id;
        }
        _ => bad(Table::District, k, v),
    })?;
    scan_all(tx, Table::Order, &mut |k, v| match (district_of(k), keys::order_id(k), Order::decode(v)) {
        (Some(wd), Some(o), Some(row)) => {
            let f = ds.entry(wd).or_default();
            f.max_o = f.max_o.max(o);
            f.ol_cnt_sum += u64::from(row.ol_cnt);
            if row.carrier_id == 0 {
                f.undelivered.push(o);
            }
            f.orders.insert(o, (row.ol_cnt, 0));
        }
        _ => bad(Table::Order, k, v),
    })?;
    scan_all(tx, Table::NewOrder, &mut |k, v| match (district_of(k), keys::order_id(k)) {
        (Some(wd), Some(o)) => ds.entry(wd).or_default().new_orders.push(o),
        _ => bad(Table::NewOrder, k, v),
    })?;
    scan_all(tx, Table::OrderLine, &mut |k, v| match (district_of(k), keys::order_id(k), OrderLine::decode(v)) {
        (Some(wd), Some(o), Some(_)) => {
            let f = ds.entry(wd).or_default();
            f.lines += 1;
            if let Some(e) = f.orders.get_mut(&o) {
                e.1 += 1;
            }
        }
        _ => bad(Table::OrderLine, k, v),
    })?;
    scan_all(tx, Table::OrderCustomer, &mut |k, v| match (district_of(k), keys::order_customer_order(k)) {
        (Some(wd), Some(o)) => {
            let f = ds.entry(wd).or_default();
            f.order_index += 1;
            f.order_index_bad += u64::from(!f.orders.contains_key(&o));
        }
        _ => bad(Table::OrderCustomer, k, v),
    })?;
    let (mut customers, mut names) = (0u64, 0u64);
    scan_all(tx, Table::Customer, &mut |k, v| match Customer::decode(v) {
        Some(_) => customers += 1,
        None => bad(Table::Customer, k, v),
    })?;
    scan_all(tx, Table::CustomerName, &mut |_, _| names += 1)?;
    if let Some((table, key, len)) = corrupt {
        return Err(TxError::Corrupt { table, key, len });
    }

    // Condition 1.
    rep.warehouses = wh.len() as u64;
    for (&w, &ytd) in &wh {
        let sum: i64 = ds.range((w, 0)..=(w, u8::MAX)).map(|(_, f)| f.ytd).sum();
        if sum != ytd {
            rep.violate(1, format!("warehouse {w}: W_YTD {ytd} ≠ Σ D_YTD {sum}"));
        }
    }
    // Conditions 2–6 and the order index, per district.
    rep.districts = ds.len() as u64;
    for (&(w, d), f) in &ds {
        let at = format!("warehouse {w} district {d}");
        rep.orders += f.orders.len() as u64;
        rep.new_orders += f.new_orders.len() as u64;
        rep.order_lines += f.lines;
        let max_no = f.new_orders.last().copied();
        if f.next_o_id != f.max_o + 1 || max_no.is_some_and(|m| m != f.max_o) {
            rep.violate(2, format!("{at}: D_NEXT_O_ID {} , max O_ID {}, max NO_O_ID {max_no:?}", f.next_o_id, f.max_o));
        }
        if let (Some(&lo), Some(hi)) = (f.new_orders.first(), max_no)
            && u64::from(hi - lo + 1) != f.new_orders.len() as u64
        {
            rep.violate(3, format!("{at}: new orders {lo}..={hi} but {} rows", f.new_orders.len()));
        }
        if f.ol_cnt_sum != f.lines {
            rep.violate(4, format!("{at}: Σ O_OL_CNT {} ≠ {} order lines", f.ol_cnt_sum, f.lines));
        }
        if f.undelivered != f.new_orders {
            rep.violate(
                5,
                format!(
                    "{at}: {} orders without a carrier, {} new-order rows",
                    f.undelivered.len(),
                    f.new_orders.len()
                ),
            );
        }
        if let Some((o, (cnt, found))) = f.orders.iter().find(|(_, (cnt, found))| u32::from(*cnt) != *found) {
            rep.violate(6, format!("{at}: order {o} has O_OL_CNT {cnt} but {found} lines"));
        }
        if f.order_index != f.orders.len() as u64 || f.order_index_bad > 0 {
            rep.violate(
                7,
                format!(
                    "{at}: {} orders, {} order_customer entries ({} without an order)",
                    f.orders.len(),
                    f.order_index,
                    f.order_index_bad
                ),
            );
        }
    }
    if customers != names {
        rep.violate(7, format!("{customers} customers but {names} customer_name entries"));
    }
    Ok(rep)
}
