//! A B+-tree on the three-tier buffer manager: DRAM frames over an NVM pool (a file on
//! /dev/shm) over an SSD page file; insert, look up, scan, close, reopen.
//!
//! `cargo run --release -p tierdb --example btree`

use tierdb::buffer::{BufferConfig, BufferManager, Techniques};
use tierdb::device::{NvmConfig, OpenMode, SsdConfig};
use tierdb::{ByteSize, Catalog};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("tierdb-example-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let mut cfg = BufferConfig::new(ByteSize(4 << 20)); // 4 MiB of DRAM frames
    cfg.nvm = Some(NvmConfig::new(NvmConfig::default_path("example"), ByteSize(16 << 20)));
    cfg.ssd = Some(SsdConfig::new(dir.join("data.db")));
    cfg.ssd_open_mode = OpenMode::Create;
    cfg.policy = "hymem".into();
    cfg.techniques = Techniques::ALL; // cache-line-grained pages, mini pages, swizzling

    let bm = BufferManager::open(&cfg)?;
    let users = Catalog::create_tree(&bm, "users")?;
    for i in 0..100_000u64 {
        users.insert(format!("user{i:08}").as_bytes(), &[(i % 251) as u8; 200])?;
    }
    assert_eq!(users.get(b"user00000042", |v| v[0])?, Some(42));
    let mut seen = 0;
    users.scan(b"user00000100", |key, _value| {
        seen += 1;
        assert!(key >= b"user00000100".as_slice());
        seen < 10
    })?;
    let s = bm.stats().buffer;
    println!(
        "DRAM hits {}, NVM hits {}, SSD reads {}, NVM admissions {}, pages DRAM → SSD {}",
        s.dram_hits, s.nvm_hits, s.ssd_reads, s.nvm_admissions, s.dram_to_ssd_pages
    );
    println!(
        "lines NVM → DRAM {}, mini pages {} (promoted {}), swizzled references {}",
        s.nvm_lines_loaded, s.mini_allocations, s.mini_promotions, s.swizzles
    );
    bm.close()?; // checkpoint: every page on SSD, catalog and free list in the superblock

    cfg.ssd_open_mode = OpenMode::Open;
    let bm = BufferManager::open(&cfg)?;
    let users = Catalog::open_tree(&bm, "users")?;
    assert_eq!(users.get(b"user00099999", |v| v.len())?, Some(200));
    println!("reopened: {} trees, user00099999 found", Catalog::list(&bm)?.len());
    drop(bm);
    std::fs::remove_dir_all(&dir)?;
    std::fs::remove_file(NvmConfig::default_path("example"))?;
    Ok(())
}
