//! Cache-line flushes and store fences: how a write to the NVM mapping becomes durable.
//!
//! The flush instruction is chosen once, at run time, from CPUID: `clwb` (write back,
//! keep the line cached) where the CPU has it, else `clflushopt`, else `clflush`.
//! Stable Rust has no intrinsics for the first two, so they are emitted with inline
//! assembly; the fence is `sfence`. `clflush` stays as the fallback because some
//! environments (valgrind) hide the newer CPUID bits and raise SIGILL on them.
//!
//! On targets other than x86-64 no flush instruction is emitted; durability then
//! rests on `msync` (see the NVM region, `nvm.rs`).

#![allow(unsafe_code)]

use std::sync::atomic::{AtomicU8, Ordering};

use serde::{Deserialize, Serialize};

use crate::limits::CACHE_LINE_BYTES;

/// A way to write a cache line back to memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FlushInstruction {
    /// Write back, line stays in the cache (Skylake-SP and later, Zen 2 and later).
    Clwb,
    /// Write back and invalidate, weakly ordered (needs a fence).
    Clflushopt,
    /// Write back and invalidate, ordered with other `clflush`es; slowest.
    Clflush,
    /// No flush instruction on this target: only `msync` makes data durable.
    None,
}

impl FlushInstruction {
    /// The instruction's mnemonic (`none` for [`FlushInstruction::None`]).
    pub fn name(self) -> &'static str {
        match self {
            FlushInstruction::Clwb => "clwb",
            FlushInstruction::Clflushopt => "clflushopt",
            FlushInstruction::Clflush => "clflush",
            FlushInstruction::None => "none",
        }
    }

    /// Parses `auto`, `clwb`, `clflushopt`, `clflush`; `auto` is [`best`].
    pub fn parse(text: &str) -> Option<FlushInstruction> {
        match text {
            "auto" => Some(best()),
            "clwb" => Some(FlushInstruction::Clwb),
            "clflushopt" => Some(FlushInstruction::Clflushopt),
            "clflush" => Some(FlushInstruction::Clflush),
            _ => None,
        }
    }

    /// Whether this CPU executes the instruction.
    pub fn supported(self) -> bool {
        let caps = cpu_caps();
        match self {
            FlushInstruction::Clwb => caps.clwb,
            FlushInstruction::Clflushopt => caps.clflushopt,
            FlushInstruction::Clflush => caps.clflush,
            FlushInstruction::None => true,
        }
    }
}

/// What CPUID says about the flush instructions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CpuCaps {
    /// `clwb` is available (CPUID leaf 7, EBX bit 24).
    pub clwb: bool,
    /// `clflushopt` is available (CPUID leaf 7, EBX bit 23).
    pub clflushopt: bool,
    /// `clflush` is available (CPUID leaf 1, EDX bit 19); false off x86-64.
    pub clflush: bool,
}

const CAPS_UNKNOWN: u8 = 0x80;
static CAPS: AtomicU8 = AtomicU8::new(CAPS_UNKNOWN);

/// The CPU's flush capabilities, read from CPUID once.
pub fn cpu_caps() -> CpuCaps {
    let mut bits = CAPS.load(Ordering::Relaxed);
    if bits == CAPS_UNKNOWN {
        bits = detect_bits();
        CAPS.store(bits, Ordering::Relaxed);
    }
    CpuCaps { clwb: bits & 1 != 0, clflushopt: bits & 2 != 0, clflush: bits & 4 != 0 }
}

#[cfg(target_arch = "x86_64")]
fn detect_bits() -> u8 {
    use std::arch::x86_64::__cpuid_count;
    // SAFETY: CPUID exists on every x86-64 CPU; leaves 0, 1 and 7 are architectural.
    #[allow(unused_unsafe)]
    let (max_leaf, leaf1, leaf7) = unsafe {
        let max_leaf = __cpuid_count(0, 0).eax;
        let leaf1 = __cpuid_count(1, 0);
        let leaf7 = if max_leaf >= 7 { Some(__cpuid_count(7, 0)) } else { None };
        (max_leaf, leaf1, leaf7)
    };
    debug_assert!(max_leaf >= 1, "CPUID max leaf {max_leaf}");
    let mut bits = 0u8;
    if let Some(l7) = leaf7 {
        if l7.ebx & (1 << 24) != 0 {
            bits |= 1;
        }
        if l7.ebx & (1 << 23) != 0 {
            bits |= 2;
        }
    }
    if leaf1.edx & (1 << 19) != 0 {
        bits |= 4;
    }
    bits
}

#[cfg(not(target_arch = "x86_64"))]
fn detect_bits() -> u8 {
    0
}

/// The best flush instruction this CPU has.
pub fn best() -> FlushInstruction {
    let caps = cpu_caps();
    if caps.clwb {
        FlushInstruction::Clwb
    } else if caps.clflushopt {
        FlushInstruction::Clflushopt
    } else if caps.clflush {
        FlushInstruction::Clflush
    } else {
        FlushInstruction::None
    }
}

/// Writes back every cache line overlapping `[addr, addr + len)` with `how`.
/// Does not fence: call [`fence`] after the last flush of a persist.
///
/// `how` must be supported by this CPU (checked when the region was opened).
#[inline]
pub(crate) fn flush_range(how: FlushInstruction, addr: *const u8, len: usize) {
    if len == 0 {
        return;
    }
    debug_assert!(how.supported(), "{} not supported", how.name());
    let start = addr as usize & !(CACHE_LINE_BYTES - 1);
    let end = addr as usize + len;
    let mut line = start;
    while line < end {
        flush_line(how, line as *const u8);
        line += CACHE_LINE_BYTES;
    }
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn flush_line(how: FlushInstruction, line: *const u8) {
    use std::arch::asm;
    use std::arch::x86_64::_mm_clflush;
    match how {
        // SAFETY: the caller checked the CPU supports clwb; clwb on a mapped address
        // only writes the line back, it never faults on a valid mapping.
        FlushInstruction::Clwb => unsafe {
            asm!("clwb [{0}]", in(reg) line, options(nostack, preserves_flags));
        },
        // SAFETY: as above, for clflushopt.
        FlushInstruction::Clflushopt => unsafe {
            asm!("clflushopt [{0}]", in(reg) line, options(nostack, preserves_flags));
        },
        // SAFETY: clflush is baseline x86-64; the address lies in a live mapping.
        FlushInstruction::Clflush => unsafe { _mm_clflush(line) },
        FlushInstruction::None => {}
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn flush_line(_how: FlushInstruction, _line: *const u8) {}

/// Orders all earlier flushes and stores before later stores (`sfence`).
#[inline]
pub(crate) fn fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: sfence is baseline x86-64 (SSE) and has no memory operands.
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
    #[cfg(not(target_arch = "x86_64"))]
    std::sync::atomic::fence(Ordering::SeqCst);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_supported_instruction_flushes_without_fault() {
        let data = vec![7u8; 4096 + 13];
        for how in
            [FlushInstruction::Clwb, FlushInstruction::Clflushopt, FlushInstruction::Clflush, FlushInstruction::None]
        {
            if how.supported() {
                flush_range(how, data[13..].as_ptr(), 4096);
                fence();
            }
        }
        assert!(data.iter().all(|&b| b == 7));
        assert!(best().supported());
    }

    #[test]
    fn parse_names() {
        assert_eq!(FlushInstruction::parse("clwb"), Some(FlushInstruction::Clwb));
        assert_eq!(FlushInstruction::parse("auto"), Some(best()));
        assert_eq!(FlushInstruction::parse("wbinvd"), None);
    }
}
