//! Parts of buffers: device-to-device copies of element ranges (between buffers and within one)
//! and downloads of a range, so that partial copies and small results never pass through the
//! host.

use crate::error::GpuError;
use crate::gpu::Gpu;
use crate::launch::{map_dtype, DeviceBuffer, DeviceData, HostData};

/// `offset .. offset + len` of a buffer of `size` elements, or why it does not fit.
fn check_range(
    what: &str,
    buffer: &str,
    size: usize,
    offset: usize,
    len: usize,
) -> Result<(), GpuError> {
    match offset.checked_add(len) {
        Some(end) if end <= size => Ok(()),
        _ => Err(GpuError::BadBuffer {
            what: format!("{what} '{buffer}'"),
            problem: format!(
                "elements {offset}..{} of a buffer of {size}; a range must lie inside the buffer",
                offset as u128 + len as u128
            ),
        }),
    }
}

impl Gpu {
    /// Queues a device-to-device copy of `len` elements from `src[src_offset..]` to
    /// `dst[dst_offset..]` (same element type; each range inside its buffer).
    pub fn copy_range(
        &self,
        src: &DeviceBuffer,
        src_offset: usize,
        dst: &mut DeviceBuffer,
        dst_offset: usize,
        len: usize,
    ) -> Result<(), GpuError> {
        let what = format!("copy from '{}' to '{}'", src.name, dst.name);
        if src.dtype() != dst.dtype() {
            return Err(GpuError::BadBuffer {
                what,
                problem: format!(
                    "{} into {}: element types must match",
                    src.dtype(),
                    dst.dtype()
                ),
            });
        }
        check_range("copy from", &src.name, src.len(), src_offset, len)?;
        check_range("copy to", &dst.name, dst.len(), dst_offset, len)?;
        if len == 0 {
            return Ok(());
        }
        let s = &self.stream;
        let (a, b) = (src_offset..src_offset + len, dst_offset..dst_offset + len);
        let r = match (&src.data, &mut dst.data) {
            (DeviceData::F32(x), DeviceData::F32(y)) => {
                s.memcpy_dtod(&x.slice(a), &mut y.slice_mut(b))
            }
            (DeviceData::F64(x), DeviceData::F64(y)) => {
                s.memcpy_dtod(&x.slice(a), &mut y.slice_mut(b))
            }
            (DeviceData::F16(x), DeviceData::F16(y)) => {
                s.memcpy_dtod(&x.slice(a), &mut y.slice_mut(b))
            }
            (DeviceData::BF16(x), DeviceData::BF16(y)) => {
                s.memcpy_dtod(&x.slice(a), &mut y.slice_mut(b))
            }
            (DeviceData::I32(x), DeviceData::I32(y)) => {
                s.memcpy_dtod(&x.slice(a), &mut y.slice_mut(b))
            }
            (DeviceData::I64(x), DeviceData::I64(y)) => {
                s.memcpy_dtod(&x.slice(a), &mut y.slice_mut(b))
            }
            (DeviceData::U8(x), DeviceData::U8(y)) => {
                s.memcpy_dtod(&x.slice(a), &mut y.slice_mut(b))
            }
            (DeviceData::U32(x), DeviceData::U32(y)) => {
                s.memcpy_dtod(&x.slice(a), &mut y.slice_mut(b))
            }
            (DeviceData::U64(x), DeviceData::U64(y)) => {
                s.memcpy_dtod(&x.slice(a), &mut y.slice_mut(b))
            }
            // Types were checked equal above.
            _ => Ok(()),
        };
        r.map_err(|e| GpuError::driver(what, e))
    }

    /// Queues a copy of `len` elements from `buf[src_offset..]` to `buf[dst_offset..]` within
    /// one buffer; the two ranges must not overlap (the driver's copies do not define overlap).
    pub fn copy_within(
        &self,
        buf: &mut DeviceBuffer,
        src_offset: usize,
        dst_offset: usize,
        len: usize,
    ) -> Result<(), GpuError> {
        let what = format!("copy within '{}'", buf.name);
        check_range("copy from", &buf.name, buf.len(), src_offset, len)?;
        check_range("copy to", &buf.name, buf.len(), dst_offset, len)?;
        if len == 0 || src_offset == dst_offset {
            return Ok(());
        }
        if src_offset.abs_diff(dst_offset) < len {
            return Err(GpuError::BadBuffer {
                what,
                problem: format!(
                    "elements {src_offset}..{} onto {dst_offset}..{} overlap; copies within a buffer need disjoint ranges",
                    src_offset + len,
                    dst_offset + len
                ),
            });
        }
        let s = &self.stream;
        // Split where the later range starts: the earlier range lies wholly in the first half.
        let (first, second) = (src_offset.min(dst_offset), src_offset.max(dst_offset));
        macro_rules! within {
            ($x:expr) => {{
                let (mut lo, mut hi) = $x.split_at_mut(second);
                if src_offset < dst_offset {
                    s.memcpy_dtod(&lo.slice(first..first + len), &mut hi.slice_mut(0..len))
                } else {
                    s.memcpy_dtod(&hi.slice(0..len), &mut lo.slice_mut(first..first + len))
                }
            }};
        }
        let r = match &mut buf.data {
            DeviceData::F32(x) => within!(x),
            DeviceData::F64(x) => within!(x),
            DeviceData::F16(x) => within!(x),
            DeviceData::BF16(x) => within!(x),
            DeviceData::I32(x) => within!(x),
            DeviceData::I64(x) => within!(x),
            DeviceData::U8(x) => within!(x),
            DeviceData::U32(x) => within!(x),
            DeviceData::U64(x) => within!(x),
        };
        r.map_err(|e| GpuError::driver(what, e))
    }

    /// Waits for the device, then copies `len` elements from `buf[offset..]` to the host.
    pub fn download_range(
        &self,
        buf: &DeviceBuffer,
        offset: usize,
        len: usize,
    ) -> Result<HostData, GpuError> {
        check_range("download of", &buf.name, buf.len(), offset, len)?;
        self.synchronize()?;
        let s = &self.stream;
        let range = offset..offset + len;
        let out = map_dtype!(&buf.data, DeviceData => HostData, d => s.clone_dtoh(&d.slice(range.clone())));
        out.map_err(|e| {
            self.async_error(
                e,
                &format!("copying part of buffer '{}' to the host", buf.name),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::require_gpu_or_skip;
    use crate::HostData;

    #[test]
    fn ranges_copy_and_download_on_the_device() {
        let Some(gpu) = require_gpu_or_skip() else {
            return;
        };
        let a = gpu
            .upload("a", &HostData::F64((0..10).map(f64::from).collect()))
            .unwrap();
        let mut b = gpu.upload("b", &HostData::F64(vec![-1.0; 6])).unwrap();
        gpu.copy_range(&a, 7, &mut b, 1, 3).unwrap();
        assert_eq!(
            gpu.download(&b).unwrap(),
            HostData::F64(vec![-1.0, 7.0, 8.0, 9.0, -1.0, -1.0])
        );
        assert_eq!(
            gpu.download_range(&a, 2, 3).unwrap(),
            HostData::F64(vec![2.0, 3.0, 4.0])
        );
        // Out of range, other types, overlap: refused before the driver is asked.
        assert!(gpu.copy_range(&a, 8, &mut b, 0, 3).is_err());
        assert!(gpu.copy_range(&a, 0, &mut b, 4, 3).is_err());
        let c = gpu.upload("c", &HostData::F32(vec![1.0; 6])).unwrap();
        assert!(gpu.copy_range(&c, 0, &mut b, 0, 2).is_err());
        assert!(gpu.download_range(&a, 9, 2).is_err());
        let mut w = gpu.upload("w", &HostData::I32((0..8).collect())).unwrap();
        assert!(gpu.copy_within(&mut w, 0, 2, 3).is_err(), "overlap");
        gpu.copy_within(&mut w, 5, 0, 3).unwrap();
        gpu.copy_within(&mut w, 1, 4, 1).unwrap();
        assert_eq!(
            gpu.download(&w).unwrap(),
            HostData::I32(vec![5, 6, 7, 3, 6, 5, 6, 7])
        );
    }
}
