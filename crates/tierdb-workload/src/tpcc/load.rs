//! The loader: the population rules of TPC-C §4.3.3.1, one warehouse at a time.
//!
//! Each warehouse (and the item table) draws from its own random stream derived from
//! the seed, so a load is the same whatever the number of loader threads and the order
//! they take warehouses in. Rows are handed to `emit` in key order within each table
//! (the two indexes get theirs in the order of the rows they point to).

use serde::Serialize;

use super::random::{A_C_LAST, NurandC, TpccRng, last_name};
use super::rows::{
    Address, CUSTOMER_DATA_BYTES, Customer, District, History, Item, MARKER, Order, OrderLine, Stock, Warehouse,
};
use super::{DISTRICTS, LOAD_DATE, ORDER_LINES_MAX, ORDER_LINES_MIN, Scale, Table, keys};

/// Where the loader hands its rows: `(tree, key, value)`.
pub type Emit<'a, E> = dyn FnMut(Table, &[u8], &[u8]) -> Result<(), E> + 'a;

/// Rows written per tree.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LoadCounts {
    /// Rows per tree, indexed by [`Table::index`].
    pub rows: [u64; 11],
}

impl LoadCounts {
    /// Rows written to `t`.
    pub fn get(&self, t: Table) -> u64 {
        self.rows[t.index()]
    }
    /// Rows written to all trees.
    pub fn total(&self) -> u64 {
        self.rows.iter().sum()
    }
    /// Adds `o`'s counts to these (to sum the item table and each warehouse).
    pub fn add(&mut self, o: &LoadCounts) {
        for (a, b) in self.rows.iter_mut().zip(o.rows) {
            *a += b;
        }
    }
}

/// Counts each row on its way to `emit`.
struct Counted<'a, E> {
    emit: &'a mut Emit<'a, E>,
    counts: LoadCounts,
}

impl<E> Counted<'_, E> {
    fn put(&mut self, t: Table, k: &[u8], v: &[u8]) -> Result<(), E> {
        self.counts.rows[t.index()] += 1;
        (self.emit)(t, k, v)
    }
}

fn address(r: &mut TpccRng) -> Address {
    Address {
        street_1: r.astring(10, 20),
        street_2: r.astring(10, 20),
        city: r.astring(10, 20),
        state: r.astring(2, 2),
        zip: r.zip(),
    }
}

/// Loads the item table.
///
/// # Errors
/// What `emit` returns.
pub fn load_items<E>(scale: &Scale, seed: u64, emit: &mut Emit<'_, E>) -> Result<LoadCounts, E> {
    let mut r = TpccRng::new(seed, 0);
    let mut out = Counted { emit, counts: LoadCounts::default() };
    for i in 1..=scale.items {
        let item = Item {
            im_id: r.uniform_u32(1, 10_000),
            price_cents: r.uniform(100, 10_000) as i64,
            name: r.astring(14, 24),
            data: r.data_string(26, 50),
        };
        out.put(Table::Item, &keys::item(i), &item.encode())?;
    }
    Ok(out.counts)
}

/// Loads warehouse `w` (1-based): its row, its stock, its districts with their
/// customers, history, orders, order lines and new orders.
///
/// # Errors
/// What `emit` returns.
pub fn load_warehouse<E>(scale: &Scale, seed: u64, w: u32, emit: &mut Emit<'_, E>) -> Result<LoadCounts, E> {
    assert!((1..=scale.warehouses).contains(&w), "warehouse {w} outside 1..={}", scale.warehouses);
    let mut r = TpccRng::new(seed, u64::from(w));
    let c_load = NurandC::for_load(seed);
    let mut out = Counted { emit, counts: LoadCounts::default() };
    // 1. The warehouse.
    let wh = Warehouse {
        ytd_cents: 30_000_000,
        tax: r.uniform_u32(0, 2000),
        name: r.astring(6, 10),
        address: address(&mut r),
    };
    out.put(Table::Warehouse, &keys::warehouse(w), &wh.encode())?;
    // 2. Its stock, one row per item.
    for i in 1..=scale.items {
        let s = Stock {
            quantity: r.uniform(10, 100) as i32,
            ytd: 0,
            order_cnt: 0,
            remote_cnt: 0,
            dist: std::array::from_fn(|_| r.astring(24, 24)),
            data: r.data_string(26, 50),
        };
        out.put(Table::Stock, &keys::stock(w, i), &s.encode())?;
    }
    let customers = scale.customers_per_district;
    let first_new_order = customers - scale.new_orders_per_district + 1;
    for d in 1..=DISTRICTS {
        // 3. The district: orders 1..=customers exist, the next is customers + 1.
        let dist = District {
            ytd_cents: 3_000_000,
            next_o_id: customers + 1,
            tax: r.uniform_u32(0, 2000),
            name: r.astring(6, 10),
            address: address(&mut r),
        };
        out.put(Table::District, &keys::district(w, d), &dist.encode())?;
        // 4. Customers, their name index entries and one history row each.
        for c in 1..=customers {
            let name_n = if c <= scale.last_names() {
                c - 1
            } else {
                r.nurand(A_C_LAST, 0, scale.last_names() - 1, c_load.c_last)
            };
            let last = keys::name_field(&last_name(name_n));
            let cust = Customer {
                balance_cents: -1000,
                ytd_payment_cents: 1000,
                payment_cnt: 1,
                delivery_cnt: 0,
                discount: r.uniform_u32(0, 5000),
                credit_lim_cents: 5_000_000,
                credit: if r.percent(10) { *b"BC" } else { *b"GC" },
                first: r.astring(8, 16),
                middle: *b"OE",
                last,
                address: address(&mut r),
                phone: r.nstring(16, 16),
                since: LOAD_DATE,
                data: r.astring::<CUSTOMER_DATA_BYTES>(300, 500),
            };
            out.put(Table::Customer, &keys::customer(w, d, c), &cust.encode())?;
            out.put(Table::CustomerName, &keys::customer_name(w, d, &cust.last, &cust.first, c), MARKER)?;
            let h = History {
                c_id: c,
                c_d_id: d,
                c_w_id: w,
                d_id: d,
                w_id: w,
                date: LOAD_DATE,
                amount_cents: 1000,
                data: r.astring(12, 24),
            };
            out.put(Table::History, &keys::history(w, d, c, 0), &h.encode())?;
        }
        // 5. Orders, one per customer in a random permutation, with their lines; the
        //    last ones undelivered, in the new-order table.
        let mut perm: Vec<u32> = (1..=customers).collect();
        for i in (1..perm.len()).rev() {
            perm.swap(i, r.uniform(0, i as u64) as usize);
        }
        for o in 1..=customers {
            let delivered = o < first_new_order;
            let c = perm[o as usize - 1];
            let ol_cnt = r.uniform(u64::from(ORDER_LINES_MIN), u64::from(ORDER_LINES_MAX)) as u8;
            let order = Order {
                c_id: c,
                entry_d: LOAD_DATE,
                carrier_id: if delivered { r.uniform(1, 10) as u8 } else { 0 },
                ol_cnt,
                all_local: 1,
            };
            out.put(Table::Order, &keys::order(w, d, o), &order.encode())?;
            out.put(Table::OrderCustomer, &keys::order_customer(w, d, c, o), MARKER)?;
            for n in 1..=ol_cnt {
                let line = OrderLine {
                    i_id: r.uniform_u32(1, scale.items),
                    supply_w_id: w,
                    delivery_d: if delivered { LOAD_DATE } else { 0 },
                    quantity: 5,
                    amount_cents: if delivered { 0 } else { r.uniform(1, 999_999) as i64 },
                    dist_info: r.astring(24, 24),
                };
                out.put(Table::OrderLine, &keys::order_line(w, d, o, n), &line.encode())?;
            }
            if !delivered {
                out.put(Table::NewOrder, &keys::new_order(w, d, o), MARKER)?;
            }
        }
    }
    Ok(out.counts)
}
