//! Buffers aligned for `O_DIRECT` I/O.

#![allow(unsafe_code)]

use std::alloc::{Layout, alloc_zeroed, dealloc, handle_alloc_error};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

use crate::limits::IO_ALIGN_BYTES;

/// A zeroed heap buffer whose start is aligned to [`IO_ALIGN_BYTES`].
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the buffer is uniquely owned heap memory, like a Box<[u8]>.
unsafe impl Send for AlignedBuf {}
// SAFETY: shared references only read.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// A zeroed buffer of `len` bytes (`len > 0`).
    ///
    /// # Panics
    /// If `len` is zero; aborts if memory runs out.
    pub fn new(len: usize) -> AlignedBuf {
        assert!(len > 0, "empty aligned buffer");
        let layout = Self::layout(len);
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(raw) else { handle_alloc_error(layout) };
        AlignedBuf { ptr, len }
    }

    fn layout(len: usize) -> Layout {
        Layout::from_size_align(len, IO_ALIGN_BYTES).expect("aligned buffer layout")
    }
}

impl Deref for AlignedBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: ptr is a live allocation of len initialised (zeroed) bytes.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, and &mut self makes the access unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this very layout.
        unsafe { dealloc(self.ptr.as_ptr(), Self::layout(self.len)) }
    }
}

impl std::fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AlignedBuf({} bytes)", self.len)
    }
}

/// Whether `buf` can be handed to `O_DIRECT` I/O as it is.
pub fn is_io_aligned(buf: &[u8]) -> bool {
    (buf.as_ptr() as usize).is_multiple_of(IO_ALIGN_BYTES) && buf.len().is_multiple_of(IO_ALIGN_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_and_zeroed() {
        let mut b = AlignedBuf::new(16384);
        assert!(is_io_aligned(&b));
        assert!(b.iter().all(|&x| x == 0));
        b[5] = 3;
        assert_eq!(b[5], 3);
        assert!(!is_io_aligned(&b[1..4097]));
    }
}
