//! The five transactions (TPC-C §2.4–§2.8) on a [`TpccTx`].
//!
//! Each function runs one transaction's reads and writes and returns; the caller
//! commits, or rolls back when [`Done::rolled_back`] says so (New-Order's unused item)
//! or on an error. Rows a transaction changes are locked before they are read
//! ([`TpccTx::get_for_update`]), in the global order the module doc of [`super`] gives.

use std::collections::BTreeSet;

use super::mix::{CustomerBy, DeliveryInput, Input, NewOrderInput, OrderStatusInput, PaymentInput, StockLevelInput};
use super::rows::{CUSTOMER_DATA_BYTES, Customer, District, History, Item, MARKER, Order, OrderLine, Stock, Warehouse};
use super::{DISTRICTS, Scale, Table, TpccTx, TxError, keys};

/// Attempts of a Delivery to claim a district's oldest new order that concurrent
/// Deliveries keep taking first.
const DELIVERY_CLAIM_ATTEMPTS_MAX: u32 = 8;

/// Order lines Stock-Level examines: those of the district's last 20 orders.
const STOCK_LEVEL_ORDERS: u32 = 20;

/// What a transaction did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Done {
    /// New-Order met its unused item: the caller must roll back.
    pub rolled_back: bool,
    /// New-Order: the order id; Payment: the customer id; Order-Status: lines of the
    /// customer's last order; Delivery: orders delivered; Stock-Level: items below the
    /// threshold.
    pub value: u64,
}

type R<T, E> = Result<T, TxError<E>>;

/// Rows as (key, value).
type Rows = Vec<(Vec<u8>, Vec<u8>)>;

/// Runs `input` in `tx`.
///
/// # Errors
/// The store's errors; `Conflict` (retry); `Missing` or `Corrupt` for data that breaks
/// the population rules.
pub fn execute<T: TpccTx>(tx: &mut T, scale: &Scale, input: &Input) -> R<Done, T::Error> {
    match input {
        Input::NewOrder(i) => new_order(tx, scale, i),
        Input::Payment(i) => payment(tx, i),
        Input::OrderStatus(i) => order_status(tx, i),
        Input::Delivery(i) => delivery(tx, i),
        Input::StockLevel(i) => stock_level(tx, i),
    }
}

/// Reads a row that must exist, locking it first if `lock`.
fn need<T: TpccTx>(tx: &mut T, table: Table, key: &[u8], lock: bool) -> R<Vec<u8>, T::Error> {
    let v = if lock { tx.get_for_update(table, key) } else { tx.get(table, key) };
    v.map_err(TxError::Engine)?.ok_or_else(|| TxError::Missing { table, key: key.to_vec() })
}

fn decode<X, E>(table: Table, key: &[u8], b: &[u8], f: fn(&[u8]) -> Option<X>) -> R<X, E> {
    f(b).ok_or_else(|| TxError::Corrupt { table, key: key.to_vec(), len: b.len() })
}

/// Overwrites bytes of a row that must exist.
fn patch<T: TpccTx>(tx: &mut T, table: Table, key: &[u8], offset: usize, bytes: &[u8]) -> R<(), T::Error> {
    if tx.patch(table, key, offset, bytes).map_err(TxError::Engine)? {
        Ok(())
    } else {
        Err(TxError::Missing { table, key: key.to_vec() })
    }
}

/// Keys of `table` from `start` that begin with `prefix`, with their values.
fn scan_prefix<T: TpccTx>(tx: &mut T, table: Table, start: &[u8], prefix: &[u8]) -> R<Rows, T::Error> {
    let mut out = Vec::new();
    tx.scan(table, start, &mut |k, v| {
        if !k.starts_with(prefix) {
            return false;
        }
        out.push((k.to_vec(), v.to_vec()));
        true
    })
    .map_err(TxError::Engine)?;
    Ok(out)
}

/// The customer id of `by` in district (w, d): by last name, the one at position
/// ⌈n/2⌉ of the n customers with that name sorted by first name (§2.5.2.2).
fn customer_id<T: TpccTx>(tx: &mut T, w: u32, d: u8, by: &CustomerBy) -> R<u32, T::Error> {
    match by {
        CustomerBy::Id(c) => Ok(*c),
        CustomerBy::Name(last) => {
            let prefix = keys::customer_name_prefix(w, d, last);
            let hits = scan_prefix(tx, Table::CustomerName, &prefix, &prefix)?;
            if hits.is_empty() {
                return Err(TxError::Missing { table: Table::CustomerName, key: prefix.to_vec() });
            }
            let (k, _) = &hits[(hits.len() - 1) / 2];
            keys::customer_name_id(k).ok_or_else(|| TxError::Corrupt {
                table: Table::CustomerName,
                key: k.clone(),
                len: 0,
            })
        }
    }
}

/// New-Order (§2.4.2).
fn new_order<T: TpccTx>(tx: &mut T, scale: &Scale, i: &NewOrderInput) -> R<Done, T::Error> {
    let (w, d) = (i.w, i.d);
    // 1. Warehouse tax; the district's tax and next order id, which it takes.
    let wk = keys::warehouse(w);
    let wh = decode(Table::Warehouse, &wk, &need(tx, Table::Warehouse, &wk, false)?, Warehouse::decode)?;
    let dk = keys::district(w, d);
    let dist = decode(Table::District, &dk, &need(tx, Table::District, &dk, true)?, District::decode)?;
    let o = dist.next_o_id;
    patch(tx, Table::District, &dk, District::NEXT_O_ID_OFFSET, &(o + 1).to_le_bytes())?;
    // 2. The customer's discount.
    let ck = keys::customer(w, d, i.c);
    let cust = decode(Table::Customer, &ck, &need(tx, Table::Customer, &ck, false)?, Customer::decode)?;
    // 3. The order, its new-order row and its index entry.
    let all_local = i.lines.iter().all(|l| l.supply_w == w);
    let order = Order {
        c_id: i.c,
        entry_d: i.date,
        carrier_id: 0,
        ol_cnt: i.lines.len() as u8,
        all_local: u8::from(all_local),
    };
    let tx_err = TxError::Engine;
    tx.insert(Table::Order, &keys::order(w, d, o), &order.encode()).map_err(tx_err)?;
    tx.insert(Table::NewOrder, &keys::new_order(w, d, o), MARKER).map_err(TxError::Engine)?;
    tx.insert(Table::OrderCustomer, &keys::order_customer(w, d, i.c, o), MARKER).map_err(TxError::Engine)?;
    // 4. The lines, in (supplying warehouse, item) order so that stock rows are locked
    //    in one global order; each keeps its number from the input.
    let mut order_of: Vec<usize> = (0..i.lines.len()).collect();
    order_of.sort_by_key(|&n| (i.lines[n].supply_w, i.lines[n].i_id));
    let mut total_cents = 0i64;
    for n in order_of {
        let l = i.lines[n];
        let ik = keys::item(l.i_id);
        let Some(item) = tx.get(Table::Item, &ik).map_err(TxError::Engine)? else {
            // The unused item: the whole transaction rolls back (§2.4.2.3).
            debug_assert!(l.i_id > scale.items, "item {} of {} is missing", l.i_id, scale.items);
            return Ok(Done { rolled_back: true, value: u64::from(o) });
        };
        let item = decode(Table::Item, &ik, &item, Item::decode)?;
        let sk = keys::stock(l.supply_w, l.i_id);
        let mut s = decode(Table::Stock, &sk, &need(tx, Table::Stock, &sk, true)?, Stock::decode)?;
        let q = i32::from(l.quantity);
        s.quantity = if s.quantity >= q + 10 { s.quantity - q } else { s.quantity - q + 91 };
        s.ytd += u32::from(l.quantity);
        s.order_cnt = s.order_cnt.wrapping_add(1);
        if l.supply_w != w {
            s.remote_cnt = s.remote_cnt.wrapping_add(1);
        }
        patch(tx, Table::Stock, &sk, 0, &s.counters())?;
        let amount_cents = i64::from(l.quantity) * item.price_cents;
        total_cents += amount_cents;
        let line = OrderLine {
            i_id: l.i_id,
            supply_w_id: l.supply_w,
            delivery_d: 0,
            quantity: l.quantity,
            amount_cents,
            dist_info: s.dist[usize::from(d) - 1],
        };
        tx.insert(Table::OrderLine, &keys::order_line(w, d, o, n as u8 + 1), &line.encode())
            .map_err(TxError::Engine)?;
    }
    // 5. The total the terminal would show: discount and taxes (ten-thousandths).
    let _total =
        total_cents * i64::from(10_000 - cust.discount) / 10_000 * i64::from(10_000 + wh.tax + dist.tax) / 10_000;
    Ok(Done { rolled_back: false, value: u64::from(o) })
}

/// Payment (§2.5.2).
fn payment<T: TpccTx>(tx: &mut T, i: &PaymentInput) -> R<Done, T::Error> {
    // 1. Warehouse and district year-to-date.
    let wk = keys::warehouse(i.w);
    let wh = decode(Table::Warehouse, &wk, &need(tx, Table::Warehouse, &wk, true)?, Warehouse::decode)?;
    patch(tx, Table::Warehouse, &wk, Warehouse::YTD_OFFSET, &(wh.ytd_cents + i.amount_cents).to_le_bytes())?;
    let dk = keys::district(i.w, i.d);
    let dist = decode(Table::District, &dk, &need(tx, Table::District, &dk, true)?, District::decode)?;
    patch(tx, Table::District, &dk, District::YTD_OFFSET, &(dist.ytd_cents + i.amount_cents).to_le_bytes())?;
    // 2. The customer: balance, payments; a bad-credit customer's data gets the
    //    payment prepended.
    let c = customer_id(tx, i.c_w, i.c_d, &i.customer)?;
    let ck = keys::customer(i.c_w, i.c_d, c);
    let mut cust = decode(Table::Customer, &ck, &need(tx, Table::Customer, &ck, true)?, Customer::decode)?;
    cust.balance_cents -= i.amount_cents;
    cust.ytd_payment_cents += i.amount_cents;
    cust.payment_cnt += 1;
    patch(tx, Table::Customer, &ck, Customer::COUNTERS_OFFSET, &cust.counters())?;
    if &cust.credit == b"BC" {
        let mut data =
            format!("{c} {} {} {} {} {}.{:02}|", i.c_d, i.c_w, i.d, i.w, i.amount_cents / 100, i.amount_cents % 100)
                .into_bytes();
        data.extend_from_slice(&cust.data);
        data.truncate(CUSTOMER_DATA_BYTES);
        patch(tx, Table::Customer, &ck, Customer::DATA_OFFSET, &data)?;
    }
    // 3. The history row.
    let mut h_data = [0u8; 24];
    let names: Vec<u8> = wh.name.iter().chain(b"    ").chain(dist.name.iter()).copied().filter(|&b| b != 0).collect();
    let n = names.len().min(24);
    h_data[..n].copy_from_slice(&names[..n]);
    let h = History {
        c_id: c,
        c_d_id: i.c_d,
        c_w_id: i.c_w,
        d_id: i.d,
        w_id: i.w,
        date: i.date,
        amount_cents: i.amount_cents,
        data: h_data,
    };
    tx.insert(Table::History, &keys::history(i.w, i.d, c, i.history_unique), &h.encode()).map_err(TxError::Engine)?;
    Ok(Done { rolled_back: false, value: u64::from(c) })
}

/// Order-Status (§2.6.2): read only.
fn order_status<T: TpccTx>(tx: &mut T, i: &OrderStatusInput) -> R<Done, T::Error> {
    let c = customer_id(tx, i.w, i.d, &i.customer)?;
    let ck = keys::customer(i.w, i.d, c);
    let _cust = decode(Table::Customer, &ck, &need(tx, Table::Customer, &ck, false)?, Customer::decode)?;
    // The customer's latest order: the last entry of its range in the index.
    let start = keys::order_customer(i.w, i.d, c, 0);
    let orders = scan_prefix(tx, Table::OrderCustomer, &start, &start[..9])?;
    let Some(o) = orders.last().and_then(|(k, _)| keys::order_customer_order(k)) else {
        return Err(TxError::Missing { table: Table::OrderCustomer, key: start.to_vec() });
    };
    let ok = keys::order(i.w, i.d, o);
    let order = decode(Table::Order, &ok, &need(tx, Table::Order, &ok, false)?, Order::decode)?;
    let start = keys::order_line(i.w, i.d, o, 0);
    let lines = scan_prefix(tx, Table::OrderLine, &start, &start[..9])?;
    for (k, v) in &lines {
        decode(Table::OrderLine, k, v, OrderLine::decode)?;
    }
    // Reads take no locks (read uncommitted, docs/wal.md): a New-Order still running, or
    // being rolled back, has inserted its order row before its lines and removes them in
    // reverse, so fewer lines than `ol_cnt` can be seen here, never more. The
    // consistency conditions check complete orders after the run.
    debug_assert!(lines.len() <= usize::from(order.ol_cnt), "order {o} of customer {c}: {} lines", lines.len());
    Ok(Done { rolled_back: false, value: lines.len() as u64 })
}

/// Delivery (§2.7.4): the oldest undelivered order of each district of the warehouse.
fn delivery<T: TpccTx>(tx: &mut T, i: &DeliveryInput) -> R<Done, T::Error> {
    let mut delivered = 0;
    for d in 1..=DISTRICTS {
        // 1. Claim the oldest new-order row: lock it, then check it is still there (a
        //    concurrent Delivery may have taken it meanwhile; then take the next).
        let prefix = keys::district(i.w, d);
        let mut claimed = None;
        for _ in 0..DELIVERY_CLAIM_ATTEMPTS_MAX {
            let mut oldest = None;
            tx.scan(Table::NewOrder, &keys::new_order(i.w, d, 0), &mut |k, _| {
                if k.starts_with(&prefix) {
                    oldest = keys::order_id(k);
                }
                false
            })
            .map_err(TxError::Engine)?;
            let Some(o) = oldest else {
                claimed = Some(None); // no undelivered order: the district is skipped
                break;
            };
            let nk = keys::new_order(i.w, d, o);
            if tx.get_for_update(Table::NewOrder, &nk).map_err(TxError::Engine)?.is_some() {
                tx.delete(Table::NewOrder, &nk).map_err(TxError::Engine)?;
                claimed = Some(Some(o));
                break;
            }
        }
        let Some(claimed) = claimed else {
            return Err(TxError::Conflict { what: "concurrent deliveries took every new order this one found" });
        };
        let Some(o) = claimed else { continue };
        // 2. The order's carrier.
        let ok = keys::order(i.w, d, o);
        let order = decode(Table::Order, &ok, &need(tx, Table::Order, &ok, true)?, Order::decode)?;
        patch(tx, Table::Order, &ok, Order::CARRIER_OFFSET, &[i.carrier])?;
        // 3. Its lines' delivery date, and their total.
        let start = keys::order_line(i.w, d, o, 0);
        let lines = scan_prefix(tx, Table::OrderLine, &start, &start[..9])?;
        let mut total_cents = 0;
        for (k, v) in &lines {
            total_cents += decode(Table::OrderLine, k, v, OrderLine::decode)?.amount_cents;
            patch(tx, Table::OrderLine, k, OrderLine::DELIVERY_D_OFFSET, &i.date.to_le_bytes())?;
        }
        // 4. The customer's balance and delivery count.
        let ck = keys::customer(i.w, d, order.c_id);
        let mut cust = decode(Table::Customer, &ck, &need(tx, Table::Customer, &ck, true)?, Customer::decode)?;
        cust.balance_cents += total_cents;
        cust.delivery_cnt += 1;
        patch(tx, Table::Customer, &ck, Customer::COUNTERS_OFFSET, &cust.counters())?;
        delivered += 1;
    }
    Ok(Done { rolled_back: false, value: delivered })
}

/// Stock-Level (§2.8.2): read only.
fn stock_level<T: TpccTx>(tx: &mut T, i: &StockLevelInput) -> R<Done, T::Error> {
    let dk = keys::district(i.w, i.d);
    let dist = decode(Table::District, &dk, &need(tx, Table::District, &dk, false)?, District::decode)?;
    let first = dist.next_o_id.saturating_sub(STOCK_LEVEL_ORDERS).max(1);
    let end = keys::order_line(i.w, i.d, dist.next_o_id, 0);
    let mut items = BTreeSet::new();
    let mut bad = None;
    tx.scan(Table::OrderLine, &keys::order_line(i.w, i.d, first, 0), &mut |k, v| {
        if k >= &end[..] {
            return false;
        }
        match OrderLine::decode(v) {
            Some(l) => {
                items.insert(l.i_id);
            }
            None => bad = Some((k.to_vec(), v.len())),
        }
        true
    })
    .map_err(TxError::Engine)?;
    if let Some((key, len)) = bad {
        return Err(TxError::Corrupt { table: Table::OrderLine, key, len });
    }
    let mut low = 0;
    for item in items {
        let sk = keys::stock(i.w, item);
        let s = decode(Table::Stock, &sk, &need(tx, Table::Stock, &sk, false)?, Stock::decode)?;
        low += u64::from(s.quantity < i.threshold);
    }
    Ok(Done { rolled_back: false, value: low })
}
