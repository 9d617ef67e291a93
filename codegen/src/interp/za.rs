//! SME's ZA array: four f32 tiles of `L x L` elements (`L = 4*vscale`),
//! zeroed, loaded and stored by horizontal slices, and accumulated by
//! outer products (`fmopa`: fused multiply-add of every row element by every
//! column element).

use super::exec::Machine;
use super::value::Kind;
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
        self.mem.load_lanes_f(buf, &idx, &active, &mut out)?;
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
        let row_values = self.za[at..at + l].to_vec();
        self.mem.store_lanes_f(buf, &idx, &active, &row_values)?;
        self.si = idx;
        self.sb = active;
        Ok(())
    }

    pub(super) fn mopa(&mut self, tile: u8, a: Reg, b: Reg, a_mask: Option<Reg>, b_mask: Option<Reg>) -> R {
        self.stats.ops += 1;
        self.stats.vector_ops += 1;
        let l = self.za_side();
        let at = self.za_row(tile, 0)?;
        let (va, vb) = (self.rf.vf(a)?.to_vec(), self.rf.vf(b)?.to_vec());
        if va.len() != l || vb.len() != l {
            return Err(InterpError::Internal(format!(
                "outer product of {} x {} lanes into {l} x {l} tiles",
                va.len(),
                vb.len()
            )));
        }
        let rows = self.rf.mask(a_mask, l)?.map(<[bool]>::to_vec);
        let cols = self.rf.mask(b_mask, l)?.map(<[bool]>::to_vec);
        let on = |m: &Option<Vec<bool>>, i: usize| m.as_ref().is_none_or(|m| m[i]);
        for r in (0..l).filter(|&r| on(&rows, r)) {
            for c in (0..l).filter(|&c| on(&cols, c)) {
                let z = &mut self.za[at + r * l + c];
                *z = super::value::fma(Kind::F32, va[r], vb[c], *z);
            }
        }
        Ok(())
    }
}
