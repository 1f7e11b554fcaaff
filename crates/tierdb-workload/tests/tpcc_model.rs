//! TPC-C on the in-memory model at the tiny scale (not spec-conformant: 1,000 items, 30
//! customers per district): loader counts, each transaction's effect, and the
//! consistency conditions after a long mix and against broken data.

use tierdb_workload::tpcc::mix::{
    CustomerBy, DeliveryInput, LineInput, NewOrderInput, OrderStatusInput, PaymentInput, StockLevelInput,
};
use tierdb_workload::tpcc::model::MemDb;
use tierdb_workload::tpcc::rows::{Customer, District, Order, OrderLine, Stock, Warehouse};
use tierdb_workload::tpcc::{DISTRICTS, Input, Mix, Scale, Table, check_consistency, execute, keys};

const SEED: u64 = 7;

fn run(db: &MemDb, scale: &Scale, input: &Input) -> tierdb_workload::tpcc::Done {
    let mut t = db.begin();
    let done = execute(&mut t, scale, input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
    if done.rolled_back {
        t.rollback()
    } else {
        t.commit()
    }
    done
}

fn customer(db: &MemDb, w: u32, d: u8, c: u32) -> Customer {
    Customer::decode(&db.get(Table::Customer, &keys::customer(w, d, c)).unwrap()).unwrap()
}

fn district(db: &MemDb, w: u32, d: u8) -> District {
    District::decode(&db.get(Table::District, &keys::district(w, d)).unwrap()).unwrap()
}

fn stock(db: &MemDb, w: u32, i: u32) -> Stock {
    Stock::decode(&db.get(Table::Stock, &keys::stock(w, i)).unwrap()).unwrap()
}

#[test]
fn loader_writes_the_population_rules_counts() {
    let scale = Scale::tiny(2);
    let (db, counts) = MemDb::loaded(&scale, SEED);
    for t in Table::ALL {
        assert_eq!(db.len(t) as u64, counts.get(t), "{t:?}");
        if let Some(n) = scale.expected_rows(t) {
            assert_eq!(counts.get(t), n, "{t:?}");
        }
    }
    // 5..=15 lines per order: about 10 on average.
    let orders = counts.get(Table::Order);
    let lines = counts.get(Table::OrderLine);
    assert!(lines >= 5 * orders && lines <= 15 * orders && (lines as f64 / orders as f64 - 10.0).abs() < 1.0);
    let rep = check_consistency(&mut db.begin()).unwrap();
    assert!(rep.ok(), "{rep:?}");
    assert_eq!((rep.warehouses, rep.districts, rep.order_lines), (2, 20, lines));
    // Reproducible from the seed, whatever order warehouses load in.
    let (again, _) = MemDb::loaded(&scale, SEED);
    assert!(again.snapshot() == db.snapshot());
    let (other, _) = MemDb::loaded(&scale, SEED + 1);
    assert!(other.snapshot() != db.snapshot());
    // The first customers of a district carry the first last names; 10% bad credit.
    assert_eq!(&customer(&db, 1, 1, 1).last[..9], b"BARBARBAR");
    assert_eq!(district(&db, 2, 10).next_o_id, 31);
}

#[test]
fn spec_scale_counts() {
    let s = Scale::spec(3);
    assert!(s.is_spec() && !Scale::tiny(3).is_spec());
    assert_eq!(s.expected_rows(Table::Stock), Some(300_000));
    assert_eq!(s.expected_rows(Table::Customer), Some(90_000));
    assert_eq!(s.expected_rows(Table::NewOrder), Some(27_000));
    assert_eq!(s.expected_rows(Table::Item), Some(100_000));
    assert!(s.validate().is_ok());
    assert!(Scale { new_orders_per_district: 3000, ..s }.validate().is_err());
    assert!(Scale::spec(0).validate().is_err());
}

#[test]
fn new_order_takes_an_order_id_and_updates_stock() {
    let scale = Scale::tiny(2);
    let (db, _) = MemDb::loaded(&scale, SEED);
    let before = stock(&db, 1, 5);
    let remote_before = stock(&db, 2, 6);
    let lines = vec![
        LineInput { i_id: 5, supply_w: 1, quantity: 3 },
        LineInput { i_id: 6, supply_w: 2, quantity: 4 },
        LineInput { i_id: 7, supply_w: 1, quantity: 1 },
        LineInput { i_id: 8, supply_w: 1, quantity: 2 },
        LineInput { i_id: 9, supply_w: 1, quantity: 10 },
    ];
    let input = Input::NewOrder(NewOrderInput { w: 1, d: 3, c: 4, lines: lines.clone(), date: 99 });
    let done = run(&db, &scale, &input);
    assert_eq!((done.rolled_back, done.value), (false, 31));
    assert_eq!(district(&db, 1, 3).next_o_id, 32);
    let o = Order::decode(&db.get(Table::Order, &keys::order(1, 3, 31)).unwrap()).unwrap();
    assert_eq!((o.c_id, o.ol_cnt, o.all_local, o.carrier_id, o.entry_d), (4, 5, 0, 0, 99));
    assert!(db.get(Table::NewOrder, &keys::new_order(1, 3, 31)).is_some());
    assert!(db.get(Table::OrderCustomer, &keys::order_customer(1, 3, 4, 31)).is_some());
    // Line 2 is the remote one; lines keep the input's numbering.
    let l2 = OrderLine::decode(&db.get(Table::OrderLine, &keys::order_line(1, 3, 31, 2)).unwrap()).unwrap();
    assert_eq!((l2.i_id, l2.supply_w_id, l2.quantity, l2.delivery_d), (6, 2, 4, 0));
    assert_eq!(l2.dist_info, remote_before.dist[2]);
    let after = stock(&db, 1, 5);
    let q = before.quantity;
    assert_eq!(after.quantity, if q >= 13 { q - 3 } else { q - 3 + 91 });
    assert_eq!((after.ytd, after.order_cnt, after.remote_cnt), (3, 1, 0));
    assert_eq!(stock(&db, 2, 6).remote_cnt, 1);
    // The unused item: everything is rolled back, the order id is not used.
    let snapshot = db.snapshot();
    let mut bad = lines;
    bad.push(LineInput { i_id: scale.items + 1, supply_w: 1, quantity: 1 });
    let input = Input::NewOrder(NewOrderInput { w: 1, d: 3, c: 4, lines: bad, date: 100 });
    assert!(matches!(&input, Input::NewOrder(n) if n.rolls_back(&scale)));
    assert!(run(&db, &scale, &input).rolled_back);
    assert!(db.snapshot() == snapshot, "a rolled-back New-Order leaves no trace");
    assert!(check_consistency(&mut db.begin()).unwrap().ok());
}

#[test]
fn payment_moves_money_and_writes_history() {
    let scale = Scale::tiny(2);
    let (db, _) = MemDb::loaded(&scale, SEED);
    let history = db.len(Table::History);
    // By id, a remote customer.
    let c_before = customer(&db, 2, 5, 7);
    let input = Input::Payment(PaymentInput {
        w: 1,
        d: 2,
        c_w: 2,
        c_d: 5,
        customer: CustomerBy::Id(7),
        amount_cents: 12_345,
        date: 5,
        history_unique: 1 << 40,
    });
    assert_eq!(run(&db, &scale, &input).value, 7);
    let w = Warehouse::decode(&db.get(Table::Warehouse, &keys::warehouse(1)).unwrap()).unwrap();
    assert_eq!(w.ytd_cents, 30_000_000 + 12_345);
    assert_eq!(district(&db, 1, 2).ytd_cents, 3_000_000 + 12_345);
    let c = customer(&db, 2, 5, 7);
    assert_eq!(c.balance_cents, c_before.balance_cents - 12_345);
    assert_eq!((c.ytd_payment_cents, c.payment_cnt), (c_before.ytd_payment_cents + 12_345, 2));
    if &c.credit == b"BC" {
        assert!(c.data.starts_with(b"7 5 2 2 1 123.45|"));
    } else {
        assert_eq!(c.data, c_before.data);
    }
    assert!(db.get(Table::History, &keys::history(1, 2, 7, 1 << 40)).is_some());
    assert_eq!(db.len(Table::History), history + 1);
    // By last name: the middle one by first name of those with the name.
    let last = customer(&db, 1, 1, 3).last;
    let mut same: Vec<(Vec<u8>, u32)> = (1..=scale.customers_per_district)
        .map(|c| (c, customer(&db, 1, 1, c)))
        .filter(|(_, x)| x.last == last)
        .map(|(c, x)| (x.first.to_vec(), c))
        .collect();
    same.sort();
    let expect = same[(same.len() - 1) / 2].1;
    let input = Input::Payment(PaymentInput {
        w: 1,
        d: 1,
        c_w: 1,
        c_d: 1,
        customer: CustomerBy::Name(last),
        amount_cents: 100,
        date: 6,
        history_unique: 2 << 40,
    });
    assert_eq!(run(&db, &scale, &input).value, u64::from(expect));
    assert!(check_consistency(&mut db.begin()).unwrap().ok());
}

#[test]
fn delivery_delivers_the_oldest_order_of_each_district() {
    let scale = Scale::tiny(1);
    let (db, _) = MemDb::loaded(&scale, SEED);
    let new_orders = db.len(Table::NewOrder);
    let oldest = scale.customers_per_district - scale.new_orders_per_district + 1; // 22
    let o = Order::decode(&db.get(Table::Order, &keys::order(1, 4, oldest)).unwrap()).unwrap();
    let c_before = customer(&db, 1, 4, o.c_id);
    let mut total = 0;
    for n in 1..=o.ol_cnt {
        total += OrderLine::decode(&db.get(Table::OrderLine, &keys::order_line(1, 4, oldest, n)).unwrap())
            .unwrap()
            .amount_cents;
    }
    let done = run(&db, &scale, &Input::Delivery(DeliveryInput { w: 1, carrier: 7, date: 1234 }));
    assert_eq!(done.value, u64::from(DISTRICTS));
    assert_eq!(db.len(Table::NewOrder), new_orders - usize::from(DISTRICTS));
    assert!(db.get(Table::NewOrder, &keys::new_order(1, 4, oldest)).is_none());
    assert!(db.get(Table::NewOrder, &keys::new_order(1, 4, oldest + 1)).is_some());
    let o2 = Order::decode(&db.get(Table::Order, &keys::order(1, 4, oldest)).unwrap()).unwrap();
    assert_eq!(o2.carrier_id, 7);
    let l = OrderLine::decode(&db.get(Table::OrderLine, &keys::order_line(1, 4, oldest, 1)).unwrap()).unwrap();
    assert_eq!(l.delivery_d, 1234);
    let c = customer(&db, 1, 4, o.c_id);
    assert_eq!((c.balance_cents, c.delivery_cnt), (c_before.balance_cents + total, c_before.delivery_cnt + 1));
    assert!(check_consistency(&mut db.begin()).unwrap().ok());
    // Until nothing is left: districts without new orders are skipped.
    for _ in 0..scale.new_orders_per_district {
        run(&db, &scale, &Input::Delivery(DeliveryInput { w: 1, carrier: 1, date: 1 }));
    }
    assert_eq!(db.len(Table::NewOrder), 0);
    assert_eq!(run(&db, &scale, &Input::Delivery(DeliveryInput { w: 1, carrier: 1, date: 1 })).value, 0);
    assert!(check_consistency(&mut db.begin()).unwrap().ok());
}

#[test]
fn read_only_transactions_change_nothing() {
    let scale = Scale::tiny(1);
    let (db, _) = MemDb::loaded(&scale, SEED);
    let snapshot = db.snapshot();
    // Order-Status finds the customer's only order and its lines.
    let c = 9;
    let o = (1..=30)
        .find(|&o| db.get(Table::OrderCustomer, &keys::order_customer(1, 2, c, o)).is_some())
        .expect("every customer has an order");
    let order = Order::decode(&db.get(Table::Order, &keys::order(1, 2, o)).unwrap()).unwrap();
    let done = run(&db, &scale, &Input::OrderStatus(OrderStatusInput { w: 1, d: 2, customer: CustomerBy::Id(c) }));
    assert_eq!(done.value, u64::from(order.ol_cnt));
    let name = customer(&db, 1, 2, 5).last;
    run(&db, &scale, &Input::OrderStatus(OrderStatusInput { w: 1, d: 2, customer: CustomerBy::Name(name) }));
    // Stock-Level counts distinct items of the last 20 orders below the threshold.
    let mut items = std::collections::BTreeSet::new();
    for o in 11..=30 {
        for n in 1..=15 {
            if let Some(v) = db.get(Table::OrderLine, &keys::order_line(1, 6, o, n)) {
                items.insert(OrderLine::decode(&v).unwrap().i_id);
            }
        }
    }
    let low = items.iter().filter(|&&i| stock(&db, 1, i).quantity < 60).count();
    let done = run(&db, &scale, &Input::StockLevel(StockLevelInput { w: 1, d: 6, threshold: 60 }));
    assert_eq!(done.value, low as u64);
    assert!(low > 0 && low < items.len(), "a threshold in the middle: {low} of {}", items.len());
    assert!(db.snapshot() == snapshot);
}

#[test]
fn consistency_holds_after_a_long_mix_and_catches_broken_data() {
    let scale = Scale::tiny(2);
    let (db, _) = MemDb::loaded(&scale, SEED);
    let mut mixes: Vec<Mix> = (0..2).map(|t| Mix::new(&scale, SEED, t, 2)).collect();
    let mut kinds = [0u32; 5];
    for n in 0..4000 {
        let input = mixes[n % 2].next_input();
        kinds[input.kind() as usize] += 1;
        run(&db, &scale, &input);
    }
    assert!(kinds.iter().all(|&k| k > 100), "{kinds:?}");
    let rep = check_consistency(&mut db.begin()).unwrap();
    assert!(rep.ok(), "{rep:?}");
    assert!(rep.orders > 2 * 10 * 30, "New-Orders added orders: {}", rep.orders);

    // Break each condition in turn and see it reported.
    let break_and_check = |f: &dyn Fn(&mut tierdb_workload::tpcc::model::MemTx<'_>), condition: usize| {
        let mut t = db.begin();
        f(&mut t);
        let rep = check_consistency(&mut t).unwrap();
        assert!(rep.violations_by_condition[condition - 1] > 0, "condition {condition}: {rep:?}");
        drop(t); // rolled back
    };
    use tierdb_workload::tpcc::TpccTx;
    break_and_check(&|t| assert!(t.patch(Table::Warehouse, &keys::warehouse(1), 0, &1i64.to_le_bytes()).unwrap()), 1);
    break_and_check(&|t| assert!(t.patch(Table::District, &keys::district(2, 3), 8, &7u32.to_le_bytes()).unwrap()), 2);
    break_and_check(
        &|t| {
            let mut first = None;
            t.scan(Table::NewOrder, &keys::new_order(1, 1, 0), &mut |k, _| {
                first = Some(k.to_vec());
                false
            })
            .unwrap();
            // Removing a middle one leaves a gap.
            let o = keys::order_id(&first.unwrap()).unwrap();
            t.delete(Table::NewOrder, &keys::new_order(1, 1, o + 1)).unwrap();
        },
        3,
    );
    break_and_check(&|t| assert!(t.delete(Table::OrderLine, &keys::order_line(1, 1, 1, 1)).unwrap()), 4);
    break_and_check(
        &|t| assert!(t.patch(Table::Order, &keys::order(1, 1, 1), Order::CARRIER_OFFSET, &[0]).unwrap()),
        5,
    );
    assert!(check_consistency(&mut db.begin()).unwrap().ok(), "the breaks were rolled back");
}
