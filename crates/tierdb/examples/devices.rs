//! The device layer on its own: a DRAM arena, an NVM region and an SSD page file,
//! emulating Optane and an NVMe SSD in `model` mode, with the counters they keep.
//!
//! Run: `cargo run --release -p tierdb --example devices`

use tierdb::ByteSize;
use tierdb::device::clock;
use tierdb::device::{
    DeviceProfile, DramArena, DramConfig, EmulationMode, NvmConfig, NvmRegion, SsdConfig, SsdFile, page_seal,
};

fn main() -> Result<(), tierdb::Error> {
    let dir = std::env::temp_dir().join(format!("tierdb-example-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");

    // DRAM: 64 MiB of 16 KiB frames.
    let mut dram = DramArena::new(&DramConfig::new("64MiB".parse()?))?;

    // NVM: a 64 MiB file under /dev/shm, costed like an Optane DIMM, on a virtual clock.
    let mut nvm_cfg =
        NvmConfig::new(NvmConfig::default_path(&format!("tierdb-example-{}", std::process::id())), ByteSize(64 << 20));
    nvm_cfg.profile = DeviceProfile::load("optane-dcpmm")?;
    nvm_cfg.mode = EmulationMode::Model;
    let mut nvm = NvmRegion::open(&nvm_cfg)?;

    // SSD: a page file with a superblock, O_DIRECT where the file system allows it.
    let mut ssd_cfg = SsdConfig::new(dir.join("pages.db"));
    ssd_cfg.mode = EmulationMode::Model;
    let ssd = SsdFile::create(&ssd_cfg)?;
    let first = ssd.grow(8)?;

    // A page's life: written in DRAM, admitted to NVM (made durable there), written back to SSD.
    let mut page = vec![42u8; ssd.page_size()];
    page_seal::clear(&mut page); // bytes 48..64 carry the page's seal on SSD
    dram.write(0, &page)?;
    nvm.copy_in(0, &page)?;
    nvm.persist(0, page.len() as u64)?;
    ssd.write_page(first, &page)?;
    ssd.sync()?;

    // Read one cache line of it back from NVM, and the whole page from SSD.
    let mut line = [0u8; 64];
    nvm.read_lines(64, &mut line)?;
    let mut back = vec![0u8; ssd.page_size()];
    ssd.read_page(first, &mut back)?;
    assert!(line.iter().all(|&b| b == 42) && back == page);

    println!("modelled device time on this thread: {:.1} us", clock::virtual_now_ps() as f64 / 1e6);
    println!("nvm: {:?}", nvm.core().stats().snapshot());
    println!("ssd: {:?}", ssd.core().stats().snapshot());
    println!("ssd file: {:?}", ssd.info());

    drop(nvm);
    let _ = std::fs::remove_file(&nvm_cfg.path);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
