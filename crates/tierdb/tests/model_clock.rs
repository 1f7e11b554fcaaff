//! `model` mode: the thread's virtual clock equals the sum of the profiles' costs for a
//! scripted sequence of operations across the three devices, interference included.
//! The expected costs are computed here from the profile fields with the formulas of
//! `device::emulation`, independently of the emulator.

use tierdb::device::clock;
use tierdb::device::{DeviceProfile, DramArena, DramConfig, EmulationMode, NvmConfig, NvmRegion, SsdConfig, SsdFile};
use tierdb::{ByteSize, PageId};

fn ps(ns: f64) -> u64 {
    (ns * 1000.0).round() as u64
}
fn transfer(bytes: u64, gb_s: f64) -> u64 {
    (bytes as f64 * 1000.0 / gb_s).round() as u64
}
fn read(p: &DeviceProfile, media: u64) -> u64 {
    ps(p.read_latency_ns) + transfer(media, p.read_bandwidth_gb_s)
}
fn write(p: &DeviceProfile, media: u64) -> u64 {
    ps(p.write_latency_ns) + transfer(media, p.write_bandwidth_gb_s)
}
fn interfered(p: &DeviceProfile, cost: u64) -> u64 {
    (cost as f64 * p.write_read_interference).round() as u64
}

#[test]
fn virtual_clock_is_the_sum_of_profile_costs() {
    let shm = tempfile::tempdir_in("/dev/shm").unwrap();
    let disk = tempfile::tempdir().unwrap();
    let mut ncfg = NvmConfig::new(shm.path().join("m.nvm"), ByteSize(1 << 20));
    ncfg.mode = EmulationMode::Model;
    let mut nvm = NvmRegion::open(&ncfg).unwrap();
    let mut scfg = SsdConfig::new(disk.path().join("m.db"));
    scfg.mode = EmulationMode::Model;
    let ssd = SsdFile::create(&scfg).unwrap();
    ssd.grow(4).unwrap();
    let mut dcfg = DramConfig::new(ByteSize(1 << 20));
    dcfg.mode = EmulationMode::Model;
    let dram = DramArena::new(&dcfg).unwrap();
    let (n, s, d) = (&ncfg.profile, &scfg.profile, &dcfg.profile);
    let page = ssd.page_size() as u64;
    let mut line = [0u8; 64];
    let mut buf = vec![0u8; page as usize];

    clock::virtual_reset();
    let mut t = 0u64;
    let mut nvm_busy = 0u64;
    let mut ssd_busy = 0u64;

    // 1. NVM line read, 64 B: one 256-B XPLine.
    nvm.read_lines(0, &mut line).unwrap();
    t += read(n, 256);
    // 2. NVM write of two lines at 256: one XPLine; opens the interference window.
    nvm.write_lines(256, &[1u8; 128]).unwrap();
    t += write(n, 256);
    nvm_busy = nvm_busy.max(t + ps(n.interference_window_ns));
    // 3. Persist those two lines: the first line's cost plus one streamed line.
    nvm.persist(256, 128).unwrap();
    t += ps(n.persist_ns) + transfer(64, n.write_bandwidth_gb_s);
    nvm_busy = nvm_busy.max(t + ps(n.interference_window_ns));
    // 4. NVM read inside the window: slowed by the interference factor.
    assert!(t < nvm_busy);
    nvm.read_lines(1024, &mut line).unwrap();
    t += interfered(n, read(n, 256));
    // 5. SSD page read: no SSD write yet.
    ssd.read_page(PageId(1), &mut buf).unwrap();
    t += read(s, page);
    // 6. NVM page copy-out of 3000 B at offset 100: granules 0..=12 (13 x 256 B); the
    //    SSD read moved the clock past the NVM window.
    assert!(t >= nvm_busy);
    nvm.copy_out(100, &mut vec![0u8; 3000]).unwrap();
    t += read(n, 13 * 256);
    // 7. SSD page write, then a read inside the SSD's window, then a sync.
    ssd.write_page(PageId(2), &buf).unwrap();
    t += write(s, page);
    ssd_busy = ssd_busy.max(t + ps(s.interference_window_ns));
    ssd.read_page(PageId(3), &mut buf).unwrap();
    assert!(t < ssd_busy);
    t += interfered(s, read(s, page));
    ssd.sync().unwrap();
    t += ps(s.persist_ns);
    // 8. DRAM read of 100 B at 30: bytes 30..130 touch lines 0, 1 and 2 (64-B granules).
    dram.read(30, &mut [0u8; 100]).unwrap();
    t += read(d, 192);

    assert_eq!(clock::virtual_now_ps(), t, "virtual clock vs scripted sum");
    let by_device = nvm.core().stats().snapshot().modelled_ps
        + ssd.core().stats().snapshot().modelled_ps
        + dram.core().stats().snapshot().modelled_ps;
    // grow() wrote the superblock without going through the counted page path.
    assert_eq!(by_device, t, "per-device modelled time vs scripted sum");
    assert_eq!(nvm.core().stats().snapshot().interfered_reads, 1);
    assert_eq!(ssd.core().stats().snapshot().interfered_reads, 1);
    let _ = &mut nvm;
}
