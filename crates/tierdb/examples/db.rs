//! The transactional database: two trees, a committed transaction, a rolled-back one,
//! and a reopen that recovers.
//!
//! `cargo run --release -p tierdb --example db`

use tierdb::db::{CheckpointConfig, Db, DbConfig};
use tierdb::wal::Durability;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("tierdb-db-example-{}", std::process::id()));
    let mut cfg = DbConfig::new(&dir); // page file, log and control file in `dir`
    cfg.durability = Durability::Sync; // a commit returns once it is durable
    // The crash below is played by `mem::forget`, which would leave the background
    // checkpointer running beside the reopened database (a real crash stops it).
    cfg.checkpoint = CheckpointConfig::OFF;
    {
        let db = Db::open(&cfg)?;
        db.create_tree("accounts")?;
        db.create_tree("audit")?;
        let mut t = db.begin();
        t.put("accounts", b"alice", b"100")?;
        t.put("accounts", b"bob", b"50")?;
        t.put("audit", b"0001", b"opened two accounts")?;
        t.commit()?;

        let mut t = db.begin();
        t.put("accounts", b"alice", b"0")?;
        t.delete("accounts", b"bob")?;
        t.rollback()?; // as if it never happened
        assert_eq!(db.get("accounts", b"alice")?.as_deref(), Some(&b"100"[..]));

        let mut t = db.begin();
        t.put("accounts", b"carol", b"7")?;
        std::mem::forget(t); // a transaction in flight when the process dies
        std::mem::forget(db); // no checkpoint, no close: a crash
    }
    let db = Db::open(&cfg)?; // recovery: redo the log, undo the unfinished transaction
    let r = db.recovery();
    println!(
        "recovered in {:.1} ms: {} records read, {} changes redone, {} transaction(s) rolled back",
        r.secs * 1e3,
        r.records_read,
        r.changes_redone,
        r.losers.len()
    );
    assert_eq!(db.get("accounts", b"bob")?.as_deref(), Some(&b"50"[..]));
    assert_eq!(db.get("accounts", b"carol")?, None);
    let mut n = 0;
    db.scan("accounts", b"", |k, v| {
        println!("  {} = {}", String::from_utf8_lossy(k), String::from_utf8_lossy(v));
        n += 1;
        true
    })?;
    assert_eq!(n, 2);
    db.close()?;
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
