//! The transaction mix and each transaction's input (TPC-C §2.4.1, §2.5.1, §2.6.1,
//! §2.7.1, §2.8.1, §5.2.3): per worker, a seeded stream of inputs.
//!
//! A worker's home warehouses: with at most as many workers as warehouses, worker `t`
//! of `n` owns warehouses `t + 1, t + 1 + n, …` and draws its home warehouse among them
//! each transaction; with more workers, worker `t` has warehouse `t mod W + 1`. So no two
//! workers share a home warehouse while there are enough, as with one terminal set per
//! warehouse.

use serde::Serialize;

use super::random::{A_C_ID, A_C_LAST, A_OL_I_ID, NurandC, TpccRng, last_name};
use super::{DISTRICTS, LOAD_DATE, ORDER_LINES_MAX, ORDER_LINES_MIN, Scale, keys};

/// The five transactions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// New-Order (§2.4): enters an order of 5..=15 lines; 45% of the mix.
    NewOrder,
    /// Payment (§2.5): a customer pays a district; 43% of the mix.
    Payment,
    /// Order-Status (§2.6): reads a customer's latest order; read-only, 4% of the mix.
    OrderStatus,
    /// Delivery (§2.7): delivers the oldest undelivered order of each district of a
    /// warehouse; 4% of the mix.
    Delivery,
    /// Stock-Level (§2.8): counts recently ordered items whose stock is low;
    /// read-only, 4% of the mix.
    StockLevel,
}

impl Kind {
    /// The five kinds, in the order [`Mix::next_input`] lays their weights out.
    pub const ALL: [Kind; 5] = [Kind::NewOrder, Kind::Payment, Kind::OrderStatus, Kind::Delivery, Kind::StockLevel];

    /// The standard mix, in percent (sums to 100).
    pub const fn weight_percent(self) -> u32 {
        match self {
            Kind::NewOrder => 45,
            Kind::Payment => 43,
            Kind::OrderStatus | Kind::Delivery | Kind::StockLevel => 4,
        }
    }

    /// The kebab-case name, as reports print it and serde writes it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::NewOrder => "new-order",
            Kind::Payment => "payment",
            Kind::OrderStatus => "order-status",
            Kind::Delivery => "delivery",
            Kind::StockLevel => "stock-level",
        }
    }
}

const _: () = {
    let mut sum = 0;
    let mut i = 0;
    while i < Kind::ALL.len() {
        sum += Kind::ALL[i].weight_percent();
        i += 1;
    }
    assert!(sum == 100);
};

/// How a transaction names its customer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CustomerBy {
    /// The customer id, 1..=customers per district (drawn by NURand).
    Id(u32),
    /// The last name, zero-padded: the transaction takes the middle one of the
    /// customers with this name, by first name.
    Name([u8; keys::NAME_BYTES]),
}

/// One order line asked for: item, supplying warehouse, quantity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineInput {
    /// Item id, 1..=items (drawn by NURand); items + 1 for the unused item that makes
    /// the order roll back.
    pub i_id: u32,
    /// Supplying warehouse: the home warehouse for 99% of lines, another for 1%.
    pub supply_w: u32,
    /// Units ordered, 1..=10.
    pub quantity: u8,
}

/// The input of a New-Order (§2.4.1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewOrderInput {
    /// Home warehouse.
    pub w: u32,
    /// District, 1..=10.
    pub d: u8,
    /// Customer id (drawn by NURand).
    pub c: u32,
    /// The order's lines, 5..=15 of them; in 1% of orders the last names the unused
    /// item.
    pub lines: Vec<LineInput>,
    /// Entry date, seconds: [`LOAD_DATE`] plus the worker's count of transactions, so
    /// that a run is reproducible.
    pub date: u64,
}

impl NewOrderInput {
    /// True if its last item is the unused one that makes it roll back.
    pub fn rolls_back(&self, scale: &Scale) -> bool {
        self.lines.last().is_some_and(|l| l.i_id > scale.items)
    }
}

/// The input of a Payment (§2.5.1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PaymentInput {
    /// Home warehouse: the one paid to.
    pub w: u32,
    /// District paid to, 1..=10.
    pub d: u8,
    /// The customer's warehouse: `w` for 85% of payments, another for 15% (`w` when
    /// there is only one).
    pub c_w: u32,
    /// The customer's district: `d` for a local payment, drawn for a remote one.
    pub c_d: u8,
    /// The customer: by last name for 60% of payments, else by id.
    pub customer: CustomerBy,
    /// Amount paid, cents: 100..=500,000 ($1.00 to $5,000.00).
    pub amount_cents: i64,
    /// Payment date, seconds (as [`NewOrderInput::date`]).
    pub date: u64,
    /// Makes the history row's key unique.
    pub history_unique: u64,
}

/// The input of an Order-Status (§2.6.1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderStatusInput {
    /// Home warehouse.
    pub w: u32,
    /// District, 1..=10.
    pub d: u8,
    /// The customer: by last name for 60%, else by id.
    pub customer: CustomerBy,
}

/// The input of a Delivery (§2.7.1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeliveryInput {
    /// Home warehouse: all ten of its districts are delivered.
    pub w: u32,
    /// Carrier id stamped on the delivered orders, 1..=10.
    pub carrier: u8,
    /// Delivery date stamped on the order lines, seconds (as [`NewOrderInput::date`]).
    pub date: u64,
}

/// The input of a Stock-Level (§2.8.1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StockLevelInput {
    /// Home warehouse.
    pub w: u32,
    /// District whose last 20 orders are examined, 1..=10.
    pub d: u8,
    /// Stock quantity below which an item counts, 10..=20.
    pub threshold: i32,
}

/// A transaction to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    /// A New-Order.
    NewOrder(NewOrderInput),
    /// A Payment.
    Payment(PaymentInput),
    /// An Order-Status.
    OrderStatus(OrderStatusInput),
    /// A Delivery.
    Delivery(DeliveryInput),
    /// A Stock-Level.
    StockLevel(StockLevelInput),
}

impl Input {
    /// Which of the five transactions this is.
    pub fn kind(&self) -> Kind {
        match self {
            Input::NewOrder(_) => Kind::NewOrder,
            Input::Payment(_) => Kind::Payment,
            Input::OrderStatus(_) => Kind::OrderStatus,
            Input::Delivery(_) => Kind::Delivery,
            Input::StockLevel(_) => Kind::StockLevel,
        }
    }
}

/// A worker's stream of transactions.
pub struct Mix {
    scale: Scale,
    r: TpccRng,
    c: NurandC,
    homes: Vec<u32>,
    worker: u32,
    count: u64,
}

impl Mix {
    /// The stream of worker `worker` of `workers`, seeded by `seed`. Give the seed the
    /// database was loaded with: the run's NURand constant for last names is chosen
    /// against the load's constant of the same seed ([`NurandC::for_run`]).
    ///
    /// # Panics
    /// If `worker >= workers`.
    pub fn new(scale: &Scale, seed: u64, worker: u32, workers: u32) -> Mix {
        assert!(worker < workers, "worker {worker} of {workers}");
        let homes = if workers <= scale.warehouses {
            (worker + 1..=scale.warehouses).step_by(workers as usize).collect()
        } else {
            vec![worker % scale.warehouses + 1]
        };
        Mix {
            scale: *scale,
            r: TpccRng::new(seed, (1 << 32) + u64::from(worker)),
            c: NurandC::for_run(seed),
            homes,
            worker,
            count: 0,
        }
    }

    /// The worker's home warehouses.
    pub fn homes(&self) -> &[u32] {
        &self.homes
    }

    /// The next transaction of the standard mix.
    pub fn next_input(&mut self) -> Input {
        let mut x = self.r.uniform_u32(1, 100);
        let kind = Kind::ALL
            .into_iter()
            .find(|k| {
                if x <= k.weight_percent() {
                    return true;
                }
                x -= k.weight_percent();
                false
            })
            .expect("the weights sum to 100");
        self.input(kind)
    }

    /// A transaction of kind `kind` with the specification's random input.
    pub fn input(&mut self, kind: Kind) -> Input {
        self.count += 1;
        let date = LOAD_DATE + self.count;
        let w = self.homes[self.r.uniform(0, self.homes.len() as u64 - 1) as usize];
        let d = self.r.uniform(1, u64::from(DISTRICTS)) as u8;
        match kind {
            Kind::NewOrder => {
                let c = self.customer_id();
                let n = self.r.uniform(u64::from(ORDER_LINES_MIN), u64::from(ORDER_LINES_MAX)) as usize;
                let rollback = self.r.percent(1);
                let lines = (0..n)
                    .map(|i| {
                        let i_id = if rollback && i == n - 1 {
                            self.scale.items + 1
                        } else {
                            self.r.nurand(A_OL_I_ID, 1, self.scale.items, self.c.ol_i_id)
                        };
                        let supply_w = if self.r.percent(99) { w } else { self.other_warehouse(w) };
                        LineInput { i_id, supply_w, quantity: self.r.uniform(1, 10) as u8 }
                    })
                    .collect();
                Input::NewOrder(NewOrderInput { w, d, c, lines, date })
            }
            Kind::Payment => {
                let (c_w, c_d) = if self.r.percent(85) {
                    (w, d)
                } else {
                    (self.other_warehouse(w), self.r.uniform(1, u64::from(DISTRICTS)) as u8)
                };
                let customer = self.customer_by();
                Input::Payment(PaymentInput {
                    w,
                    d,
                    c_w,
                    c_d,
                    customer,
                    amount_cents: self.r.uniform(100, 500_000) as i64,
                    date,
                    history_unique: (u64::from(self.worker) + 1) << 40 | self.count,
                })
            }
            Kind::OrderStatus => Input::OrderStatus(OrderStatusInput { w, d, customer: self.customer_by() }),
            Kind::Delivery => Input::Delivery(DeliveryInput { w, carrier: self.r.uniform(1, 10) as u8, date }),
            Kind::StockLevel => Input::StockLevel(StockLevelInput { w, d, threshold: self.r.uniform(10, 20) as i32 }),
        }
    }

    fn customer_id(&mut self) -> u32 {
        self.r.nurand(A_C_ID, 1, self.scale.customers_per_district, self.c.c_id)
    }

    /// 60% by last name, 40% by id.
    fn customer_by(&mut self) -> CustomerBy {
        if self.r.percent(60) {
            let n = self.r.nurand(A_C_LAST, 0, self.scale.last_names() - 1, self.c.c_last);
            CustomerBy::Name(keys::name_field(&last_name(n)))
        } else {
            CustomerBy::Id(self.customer_id())
        }
    }

    /// A warehouse other than `w` (`w` itself when there is only one).
    fn other_warehouse(&mut self, w: u32) -> u32 {
        if self.scale.warehouses == 1 {
            return w;
        }
        let o = self.r.uniform_u32(1, self.scale.warehouses - 1);
        if o >= w { o + 1 } else { o }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mix_has_its_shares() {
        let scale = Scale::spec(4);
        let mut m = Mix::new(&scale, 42, 0, 2);
        assert_eq!(m.homes(), &[1, 3]);
        let n = 100_000;
        let mut counts = [0u32; 5];
        let (mut lines, mut remote_lines, mut rollbacks, mut payments, mut remote_payments, mut by_name) =
            (0, 0, 0, 0, 0, 0);
        for _ in 0..n {
            let i = m.next_input();
            counts[i.kind() as usize] += 1;
            match i {
                Input::NewOrder(o) => {
                    assert!(o.w == 1 || o.w == 3);
                    assert!((5..=15).contains(&o.lines.len()));
                    rollbacks += u32::from(o.rolls_back(&scale));
                    lines += o.lines.len();
                    remote_lines += o.lines.iter().filter(|l| l.supply_w != o.w).count();
                }
                Input::Payment(p) => {
                    payments += 1;
                    remote_payments += u32::from(p.c_w != p.w);
                    by_name += u32::from(matches!(p.customer, CustomerBy::Name(_)));
                }
                _ => {}
            }
        }
        let pct = |k: Kind| f64::from(counts[k as usize]) * 100.0 / f64::from(n);
        for k in Kind::ALL {
            assert!((pct(k) - f64::from(k.weight_percent())).abs() < 1.0, "{k:?}: {}%", pct(k));
        }
        let share = |a: f64, b: f64| a * 100.0 / b;
        assert!((share(remote_lines as f64, lines as f64) - 1.0).abs() < 0.3);
        assert!((share(f64::from(rollbacks), f64::from(counts[0])) - 1.0).abs() < 0.4);
        assert!((share(f64::from(remote_payments), f64::from(payments)) - 15.0).abs() < 1.5);
        assert!((share(f64::from(by_name), f64::from(payments)) - 60.0).abs() < 2.0);
    }

    #[test]
    fn more_workers_than_warehouses_share_them() {
        let scale = Scale::tiny(2);
        assert_eq!(Mix::new(&scale, 1, 2, 3).homes(), &[1]);
        assert_eq!(Mix::new(&scale, 1, 1, 3).homes(), &[2]);
        // One warehouse: remote choices fall back to the home one.
        let mut m = Mix::new(&Scale::tiny(1), 1, 0, 1);
        for _ in 0..1000 {
            if let Input::Payment(p) = m.input(Kind::Payment) {
                assert_eq!(p.c_w, 1);
            }
        }
    }
}
