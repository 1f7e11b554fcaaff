//! TPC-C as research storage engines run it: the nine tables and two secondary indexes
//! as ordered key-value trees, the loader's population rules, the five transactions with
//! the standard mix, and the consistency conditions — written against a small
//! transactional key-value interface ([`TpccTx`]), so that this crate holds no engine
//! code. The CLI runs it on tierdb's `Db` (each transaction a tierdb transaction);
//! [`model::MemDb`] runs it on `BTreeMap`s for tests.
//!
//! What follows the specification (TPC-C 5.11): table cardinalities and population
//! (§4.3.3.1), NURand with load and run constants (§2.1.6), the mix 45/43/4/4/4, remote
//! warehouses (1% of New-Order lines, 15% of Payments), customers chosen by last name
//! (60% of Payments and Order-Status), the 1% of New-Orders rolled back by an unused
//! item, Delivery deleting the oldest new-order row of each district, and consistency
//! conditions 1–4 (plus two more, [`check`]). What does not: no terminals, keying or
//! think times (workers run transactions back to back, as research engines do); the
//! Delivery runs inline, not deferred; read-only transactions read uncommitted data
//! (tierdb's readers take no locks); rows are fixed-width.
//!
//! Concurrency: a transaction locks every row it changes before reading it
//! ([`TpccTx::get_for_update`]), in one global order — warehouse, district, customer;
//! district, then stock rows sorted by (warehouse, item); new-order, order, order lines,
//! customer per district in district order — so writers never wait in a cycle. A wait
//! that times out, or a row that another transaction removed meanwhile, is a
//! retryable abort ([`TxError::is_retryable`]).

pub mod check;
pub mod keys;
pub mod load;
pub mod mix;
pub mod model;
pub mod random;
pub mod rows;
pub mod txn;

use serde::Serialize;

pub use check::{ConsistencyReport, check_consistency};
pub use load::{LoadCounts, load_items, load_warehouse};
pub use mix::{Input, Kind, Mix};
pub use random::{NurandC, TpccRng};
pub use txn::{Done, execute};

/// Districts per warehouse (fixed by the specification at every scale).
pub const DISTRICTS: u8 = 10;

/// Items in the specification's population (and stock rows per warehouse).
pub const SPEC_ITEMS: u32 = 100_000;
/// Customers per district in the specification's population (and orders loaded per
/// district).
pub const SPEC_CUSTOMERS_PER_DISTRICT: u32 = 3000;
/// Undelivered orders loaded per district in the specification's population: the last
/// 900 of the 3,000.
pub const SPEC_NEW_ORDERS_PER_DISTRICT: u32 = 900;

/// Most warehouses a run may ask for.
pub const WAREHOUSES_MAX: u32 = 10_000;

/// Fewest order lines of an order (an order has 5..=15).
pub const ORDER_LINES_MIN: u8 = 5;
/// Most order lines of an order.
pub const ORDER_LINES_MAX: u8 = 15;

/// The date the loader stamps on rows (seconds): fixed, so a load is reproducible.
pub const LOAD_DATE: u64 = 1_700_000_000;

/// How many rows each table gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Scale {
    /// Warehouses, 1..=[`WAREHOUSES_MAX`]; their ids are 1..=warehouses.
    pub warehouses: u32,
    /// Items (and stock rows per warehouse).
    pub items: u32,
    /// Customers per district (and orders loaded per district).
    pub customers_per_district: u32,
    /// Undelivered orders loaded per district (the last ones).
    pub new_orders_per_district: u32,
}

impl Scale {
    /// The specification's population for `warehouses`.
    pub fn spec(warehouses: u32) -> Scale {
        Scale {
            warehouses,
            items: SPEC_ITEMS,
            customers_per_district: SPEC_CUSTOMERS_PER_DISTRICT,
            new_orders_per_district: SPEC_NEW_ORDERS_PER_DISTRICT,
        }
    }

    /// A tiny population for tests: 1,000 items, 30 customers and orders per district,
    /// 9 of them undelivered. **Not spec-conformant**; every rule but the cardinalities
    /// holds (NURand ranges shrink with them).
    pub fn tiny(warehouses: u32) -> Scale {
        Scale { warehouses, items: 1000, customers_per_district: 30, new_orders_per_district: 9 }
    }

    /// True for the specification's cardinalities.
    pub fn is_spec(&self) -> bool {
        *self == Scale::spec(self.warehouses)
    }

    /// Orders loaded per district (one per customer).
    pub fn orders_per_district(&self) -> u32 {
        self.customers_per_district
    }

    /// Distinct last names: the specification's 1,000, fewer when there are fewer
    /// customers per district (every name a lookup can draw then exists).
    pub fn last_names(&self) -> u32 {
        self.customers_per_district.min(1000)
    }

    /// Checks the counts: warehouses 1..=[`WAREHOUSES_MAX`], items 10..=1,000,000,
    /// customers per district 3..=30,000, and fewer new orders than customers per
    /// district.
    ///
    /// # Errors
    /// `Config` for a count out of its bounds.
    pub fn validate(&self) -> Result<(), TpccError> {
        let bad = |what: String| Err(TpccError::Config { what });
        if !(1..=WAREHOUSES_MAX).contains(&self.warehouses) {
            return bad(format!("warehouses {} outside 1..={WAREHOUSES_MAX}", self.warehouses));
        }
        if !(10..=SPEC_ITEMS * 10).contains(&self.items) {
            return bad(format!("items {} outside 10..={}", self.items, SPEC_ITEMS * 10));
        }
        if !(3..=SPEC_CUSTOMERS_PER_DISTRICT * 10).contains(&self.customers_per_district) {
            return bad(format!("customers per district {} outside 3..=30000", self.customers_per_district));
        }
        if self.new_orders_per_district >= self.customers_per_district {
            return bad(format!(
                "new orders per district {} must be fewer than the orders ({})",
                self.new_orders_per_district, self.customers_per_district
            ));
        }
        Ok(())
    }

    /// Rows the loader writes, per table (order lines and history are exact too: the
    /// loader's counts are returned by it; this is the expectation without them).
    pub fn expected_rows(&self, table: Table) -> Option<u64> {
        let w = u64::from(self.warehouses);
        let d = w * u64::from(DISTRICTS);
        let c = d * u64::from(self.customers_per_district);
        Some(match table {
            Table::Warehouse => w,
            Table::District => d,
            Table::Customer | Table::CustomerName | Table::History | Table::Order | Table::OrderCustomer => c,
            Table::NewOrder => d * u64::from(self.new_orders_per_district),
            Table::Item => u64::from(self.items),
            Table::Stock => w * u64::from(self.items),
            Table::OrderLine => return None,
        })
    }
}

/// The trees of a TPC-C database: nine tables and two secondary indexes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Table {
    /// One row per warehouse ([`rows::Warehouse`]).
    Warehouse,
    /// Ten rows per warehouse ([`rows::District`]).
    District,
    /// One row per customer ([`rows::Customer`]).
    Customer,
    /// Index: customers by (warehouse, district, last name, first name).
    CustomerName,
    /// Payments ([`rows::History`]); the key adds a unique number, as the table has no
    /// primary key.
    History,
    /// Undelivered orders: a key per order, value [`rows::MARKER`]; Delivery removes
    /// the oldest of each district.
    NewOrder,
    /// One row per order ([`rows::Order`]).
    Order,
    /// Index: orders by (warehouse, district, customer, order).
    OrderCustomer,
    /// 5..=15 rows per order ([`rows::OrderLine`]).
    OrderLine,
    /// The items, shared by every warehouse and never changed ([`rows::Item`]).
    Item,
    /// One row per (warehouse, item) ([`rows::Stock`]).
    Stock,
}

impl Table {
    /// Every tree, in [`Table::index`] order.
    pub const ALL: [Table; 11] = [
        Table::Warehouse,
        Table::District,
        Table::Customer,
        Table::CustomerName,
        Table::History,
        Table::NewOrder,
        Table::Order,
        Table::OrderCustomer,
        Table::OrderLine,
        Table::Item,
        Table::Stock,
    ];

    /// The tree's name in the database.
    pub fn name(self) -> &'static str {
        match self {
            Table::Warehouse => "warehouse",
            Table::District => "district",
            Table::Customer => "customer",
            Table::CustomerName => "customer_name",
            Table::History => "history",
            Table::NewOrder => "new_order",
            Table::Order => "order",
            Table::OrderCustomer => "order_customer",
            Table::OrderLine => "order_line",
            Table::Item => "item",
            Table::Stock => "stock",
        }
    }

    /// The tree's position in [`Table::ALL`] (0..11), for per-tree arrays such as
    /// [`LoadCounts::rows`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// What a TPC-C transaction needs of a transactional store. One value is one open
/// transaction: the caller commits or rolls it back after the TPC-C transaction
/// returns.
pub trait TpccTx {
    /// The store's error; [`TxError::is_retryable`] asks the caller which ones are
    /// worth a retry.
    type Error;

    /// The value of `key`, without locking it.
    ///
    /// # Errors
    /// The store's.
    fn get(&mut self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, Self::Error>;

    /// Locks `key` for the rest of the transaction (exclusively), then reads it.
    ///
    /// # Errors
    /// The store's, e.g. a lock wait that timed out.
    fn get_for_update(&mut self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, Self::Error>;

    /// Inserts (or overwrites) `key`.
    ///
    /// # Errors
    /// The store's.
    fn insert(&mut self, table: Table, key: &[u8], value: &[u8]) -> Result<(), Self::Error>;

    /// Overwrites bytes `offset..offset + bytes.len()` of `key`'s value; false if absent.
    ///
    /// # Errors
    /// The store's.
    fn patch(&mut self, table: Table, key: &[u8], offset: usize, bytes: &[u8]) -> Result<bool, Self::Error>;

    /// Removes `key`; false if absent.
    ///
    /// # Errors
    /// The store's.
    fn delete(&mut self, table: Table, key: &[u8]) -> Result<bool, Self::Error>;

    /// Calls `f(key, value)` for keys `>= start` in order until it returns false.
    ///
    /// # Errors
    /// The store's.
    fn scan(&mut self, table: Table, start: &[u8], f: &mut dyn FnMut(&[u8], &[u8]) -> bool) -> Result<(), Self::Error>;
}

/// Why a TPC-C transaction did not finish.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TxError<E> {
    /// The store failed (a lock timeout among others: [`TxError::is_retryable`] asks the
    /// caller's classifier).
    #[error("{0}")]
    Engine(E),
    /// Another transaction changed what this one relied on (a new-order row that a
    /// concurrent Delivery removed): roll back and retry.
    #[error("conflict: {what}")]
    Conflict {
        /// What the other transaction took away.
        what: &'static str,
    },
    /// A row the population rules guarantee is missing: the data is inconsistent.
    #[error("table {table:?}: no row for key {key:02x?}")]
    Missing {
        /// The tree the row should be in.
        table: Table,
        /// The key looked up (for a customer by last name, the name's key prefix).
        key: Vec<u8>,
    },
    /// A row that does not decode as its table's layout.
    #[error("table {table:?}: a row of {len} bytes does not decode (key {key:02x?})")]
    Corrupt {
        /// The tree the row is in.
        table: Table,
        /// The row's key.
        key: Vec<u8>,
        /// The value's length, bytes (0 for an index key that does not decode).
        len: usize,
    },
}

impl<E> TxError<E> {
    /// Retryable: a conflict, or an engine error `engine_retryable` says is one.
    pub fn is_retryable(&self, engine_retryable: impl FnOnce(&E) -> bool) -> bool {
        match self {
            TxError::Conflict { .. } => true,
            TxError::Engine(e) => engine_retryable(e),
            _ => false,
        }
    }
}

/// Configuration errors of the TPC-C workload.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TpccError {
    /// A [`Scale`] out of its bounds ([`Scale::validate`]).
    #[error("TPC-C configuration: {what}")]
    Config {
        /// Which count and its bounds.
        what: String,
    },
}
