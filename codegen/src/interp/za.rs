//! SME's ZA array: four 32-bit tiles of `L x L` elements (`L = 4*vscale`),
//! f32 or i32 by use, zeroed, loaded and stored by horizontal slices, and
//! accumulated by outer products: `fmopa` (fused multiply-add of every row
//! element by every column element), the widening `fmopa` (pairs of f16),
//! the widening `bfmopa` (pairs of bf16) and `smopa` (quads of i8 into i32).

use super::exec::Machine;
use super::value::{self, Class, Kind};
use super::InterpError;
use crate::vprog::{BufId, Reg, ZA_TILES};
use std::mem::take;

type R = Result<(), InterpError>;

impl Machine<'_> {
    /// Lanes of one f32 streaming vector: the side of a tile.
    fn za_side(&self) -> usize {
        4 * self.vscale as usize
    }

    /// The element offset of `tile[row][0]`, allocating ZA on first use.
    fn za_row(&mut self, tile: u8, row: i64) -> Result<usize, InterpError> {
        let l = self.za_side();
        if self.za.is_empty() {
            self.za = vec![0.0; usize::from(ZA_TILES) * l * l];
        }
        if tile >= ZA_TILES {
            return Err(InterpError::Internal(format!("ZA tile {tile} does not exist")));
        }
        if row < 0 || row as u64 >= l as u64 {
            return Err(InterpError::LaneOutOfRange { lane: row, lanes: l });
        }
        Ok((usize::from(tile) * l + row as usize) * l)
    }

    pub(super) fn za_zero(&mut self, tile: u8) -> R {
        self.stats.ops += 1;
        let l = self.za_side();
        let at = self.za_row(tile, 0)?;
        self.za[at..at + l * l].fill(0.0);
        Ok(())
    }

    /// A horizontal slice access of `tile` at `row`: the slice's offset in
    /// ZA, its lanes, the element indices `base..base + lanes` (in the
    /// index scratch buffer, to be given back) and the active lanes.
    fn za_slice(
        &mut self,
        tile: u8,
        row: Reg,
        base: Reg,
        mask: Option<Reg>,
    ) -> Result<(usize, usize, Vec<i64>, Vec<bool>), InterpError> {
        let l = self.za_side();
        let at = self.za_row(tile, self.rf.i(row)?)?;
        let base = self.rf.i(base)?;
        let active = self.active_mask(mask, l)?;
        let mut idx = take(&mut self.si);
        idx.clear();
        idx.extend((0..l as i64).map(|i| base.saturating_add(i)));
        Ok((at, l, idx, active))
    }

    pub(super) fn za_load(&mut self, tile: u8, row: Reg, buf: BufId, base: Reg, mask: Option<Reg>) -> R {
        self.stats.ops += 1;
        self.stats.vector_ops += 1;
        self.stats.loads += 1;
        let (at, l, idx, active) = self.za_slice(tile, row, base, mask)?;
        let mut out = take(&mut self.sf);
        out.clear();
        if self.mem.holds_ints(buf)? {
            let mut ints = take(&mut self.si2);
            ints.clear();
            self.mem.load_lanes_i(buf, &idx, &active, &mut ints)?;
            out.extend(ints.iter().map(|&x| x as f64));
            self.si2 = ints;
        } else {
            self.mem.load_lanes_f(buf, &idx, &active, &mut out)?;
        }
        self.stats.elements_loaded += active.iter().filter(|&&on| on).count() as u64;
        self.za[at..at + l].copy_from_slice(&out);
        self.si = idx;
        self.sf = out;
        self.sb = active;
        Ok(())
    }

    pub(super) fn za_store(&mut self, tile: u8, row: Reg, buf: BufId, base: Reg, mask: Option<Reg>) -> R {
        self.stats.ops += 1;
        self.stats.vector_ops += 1;
        self.stats.stores += 1;
        let (at, l, idx, active) = self.za_slice(tile, row, base, mask)?;
        self.stats.elements_stored += active.iter().filter(|&&on| on).count() as u64;
        if self.mem.holds_ints(buf)? {
            let row_values: Vec<i64> = self.za[at..at + l].iter().map(|&x| x as i64).collect();
            self.mem.store_lanes_i(buf, &idx, &active, &row_values)?;
        } else {
            let row_values = self.za[at..at + l].to_vec();
            self.mem.store_lanes_f(buf, &idx, &active, &row_values)?;
        }
        self.si = idx;
        self.sb = active;
        Ok(())
    }

    /// `dst` = vertical slice `slice` of `tile`: element `slice` of every row.
    pub(super) fn za_read_vertical(&mut self, dst: Reg, tile: u8, slice: Reg) -> R {
        let l = self.za_side();
        let col = self.rf.i(slice)?;
        if col < 0 || col as u64 >= l as u64 {
            return Err(InterpError::LaneOutOfRange { lane: col, lanes: l });
        }
        let at = self.za_row(tile, 0)?;
        let mut out = take(&mut self.sf);
        out.clear();
        out.extend((0..l).map(|r| self.za[at + r * l + col as usize]));
        self.sf = self.rf.put_vf(dst, out)?;
        Ok(())
    }

    /// An outer product into `tile`: `g` reduction elements per row and
    /// column (1 for f32, 2 for f16 or bf16 into f32, 4 for i8 into i32), each pair
    /// of elements taking part when its lanes are active in both masks.
    pub(super) fn mopa(&mut self, tile: u8, a: Reg, b: Reg, a_mask: Option<Reg>, b_mask: Option<Reg>) -> R {
        self.stats.ops += 1;
        self.stats.vector_ops += 1;
        let l = self.za_side();
        let at = self.za_row(tile, 0)?;
        let kind = self.rf.kind(a);
        let (va, vb): (Vec<f64>, Vec<f64>) = match kind.class() {
            Class::Float => (self.rf.vf(a)?.to_vec(), self.rf.vf(b)?.to_vec()),
            _ => {
                (self.rf.vi(a)?.iter().map(|&x| x as f64).collect(), self.rf.vi(b)?.iter().map(|&x| x as f64).collect())
            }
        };
        let g = match kind {
            Kind::F32 => 1,
            Kind::F16 | Kind::BF16 => 2,
            Kind::I8 => 4,
            _ => return Err(InterpError::Internal(format!("outer product of {kind:?} vectors"))),
        };
        if va.len() != g * l || vb.len() != g * l {
            return Err(InterpError::Internal(format!(
                "outer product of {} x {} lanes into {l} x {l} tiles ({g} elements per row)",
                va.len(),
                vb.len()
            )));
        }
        let rows = self.rf.mask(a_mask, g * l)?.map(<[bool]>::to_vec);
        let cols = self.rf.mask(b_mask, g * l)?.map(<[bool]>::to_vec);
        let on = |m: &Option<Vec<bool>>, i: usize| m.as_ref().is_none_or(|m| m[i]);
        for r in 0..l {
            for c in 0..l {
                let pairs = (0..g).filter(|&q| on(&rows, g * r + q) && on(&cols, g * c + q));
                let z = &mut self.za[at + r * l + c];
                match kind {
                    Kind::F32 => {
                        if pairs.count() == 1 {
                            *z = value::fma(Kind::F32, va[r], vb[c], *z);
                        }
                    }
                    // The f16 products are exact in f64; their sum is rounded
                    // once to f32 and then added to the tile (not fused), as
                    // QEMU computes the widening `fmopa`.
                    Kind::F16 => {
                        let mut dot = 0.0;
                        let mut any = false;
                        for q in pairs {
                            dot += va[g * r + q] * vb[g * c + q];
                            any = true;
                        }
                        if any {
                            *z = f64::from(*z as f32 + dot as f32);
                        }
                    }
                    Kind::BF16 => {
                        let mut any = false;
                        let mut prods = [0.0; 2];
                        for q in pairs {
                            prods[q] = va[g * r + q] * vb[g * c + q];
                            any = true;
                        }
                        if any {
                            *z = bf_dot_add(*z, prods[0], prods[1]);
                        }
                    }
                    _ => {
                        let dot: i64 = pairs.map(|q| va[g * r + q] as i64 * vb[g * c + q] as i64).sum();
                        *z = value::wrap_int(Kind::I32, *z as i64 + dot) as f64;
                    }
                }
            }
        }
        Ok(())
    }
}

/// The widening `bfmopa` step of one tile element: `z + (p0 + p1)` where
/// `p0`, `p1` are the two products of bf16 pairs (exact in f64), with the
/// Arm ARM's BFDotAdd rules without FEAT_EBF16 (what QEMU 7.2 implements;
/// `FPCR` is ignored): each product, their sum and the final addition are
/// rounded to f32 *to odd*, inputs and results below the normal range are
/// flushed to zero.
pub(super) fn bf_dot_add(z: f64, p0: f64, p1: f64) -> f64 {
    let (p0, p1) = (flush(round_odd_f32(p0, 0.0)), flush(round_odd_f32(p1, 0.0)));
    let sum = flush(round_odd_f32(p0, p1));
    flush(round_odd_f32(flush(z), sum))
}

/// Values below the smallest normal f32 become zero of the same sign.
fn flush(x: f64) -> f64 {
    if x != 0.0 && x.abs() < f64::from(f32::MIN_POSITIVE) {
        0.0f64.copysign(x)
    } else {
        x
    }
}

/// `a + b` rounded once to f32 to odd (exactly: the f64 sum's own rounding
/// error, from TwoSum, makes it odd in f64 first, and round-to-odd twice is
/// round-to-odd once).
fn round_odd_f32(a: f64, b: f64) -> f64 {
    let s = value::add_to_odd(a, b);
    if !s.is_finite() {
        return s;
    }
    f64::from(scaletune_space::data::f64_to_f32_odd(s))
}

#[cfg(test)]
mod tests {
    use super::bf_dot_add;

    #[test]
    fn bfmopa_rounds_to_odd_and_flushes() {
        let p = 2f64.powi(-30);
        // 1 + 2^-30 rounds to odd (up to 1 + 2^-23), not to nearest (1).
        assert_eq!(bf_dot_add(0.0, 1.0, p), 1.0 + 2f64.powi(-23));
        assert_eq!(bf_dot_add(1.0, p, 0.0), 1.0 + 2f64.powi(-23));
        // An odd result that is inexact stays.
        assert_eq!(bf_dot_add(1.0 + 2f64.powi(-23), p, 0.0), 1.0 + 2f64.powi(-23));
        // Exact sums are exact.
        assert_eq!(bf_dot_add(0.5, 0.25, -0.125), 0.625);
        // A product below the normal f32 range is flushed to zero.
        assert_eq!(bf_dot_add(1.0, 2f64.powi(-140), 0.0), 1.0);
        assert_eq!(bf_dot_add(0.0, 2f64.powi(-130), 0.0), 0.0);
        // Overflow is infinite.
        assert_eq!(bf_dot_add(0.0, 2f64.powi(200), 0.0), f64::INFINITY);
    }
}
