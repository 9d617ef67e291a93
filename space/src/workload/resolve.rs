//! Binding parameters, typing statements and inferring axis extents.

use super::error::WorkloadError;
use super::spec::{SizeItem, WorkloadSpec};
use super::stmt::{parse_statement, Raw, RawStmt, Scope};
use super::*;
use crate::expr::{bounds, eval, parse_expr, NameResolver, RangeCtx};
use crate::ids::VarId;
use crate::limits::{checked_product, MAX_EXTENT};
use crate::text::{lex, Cursor, SyntaxError};
use toml::Spanned;

struct ParamNames<'a>(&'a [(String, i64)]);

impl NameResolver for ParamNames<'_> {
    fn name(&mut self, name: &str, offset: usize) -> Result<Expr, SyntaxError> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| Expr::Int(*v))
            .ok_or_else(|| SyntaxError::new(offset, format!("unknown parameter `{name}`")))
    }
}

impl WorkloadSpec {
    /// Evaluates a size item (integer or parameter expression).
    fn size(&self, item: &Spanned<SizeItem>, params: &[(String, i64)], what: &str) -> Result<i64, WorkloadError> {
        let base = item.span().start + 1;
        let v = match item.get_ref() {
            SizeItem::Int(v) => *v,
            SizeItem::Expr(s) => {
                let toks = lex(s).map_err(|e| self.at(base + e.offset, format!("in {what}: {}", e.message)))?;
                let mut cur = Cursor::new(toks);
                let e = parse_expr(&mut cur, &mut ParamNames(params))
                    .and_then(|e| cur.expect_eof("expression").map(|_| e))
                    .map_err(|e| self.at(base + e.offset, format!("in {what}: {}", e.message)))?;
                let none_var = |_: VarId| None;
                let none_load = |_: TensorId, _: &[i64]| None;
                eval(&e, &none_var, 1, &none_load).map_err(|e| self.at(base - 1, format!("in {what}: {e}")))?
            }
        };
        Ok(v)
    }
}

struct AxisCtx<'a> {
    extents: &'a [i64],
    tensors: &'a [Tensor],
}

impl RangeCtx for AxisCtx<'_> {
    fn var_extent(&self, v: VarId) -> Option<Expr> {
        self.extents.get(v.index()).map(|e| Expr::Int(*e))
    }
    fn tensor_range(&self, t: TensorId) -> Option<(i64, i64)> {
        self.tensors.get(t.index()).and_then(|t| t.range)
    }
    fn vscales(&self) -> &[u32] {
        &[1]
    }
}

/// ` with P=V, ...` naming the parameters given on the command line, so that
/// an error located at a default in the file says which values it came from.
fn with_overrides(overrides: &[(String, i64)]) -> String {
    if overrides.is_empty() {
        return String::new();
    }
    let given: Vec<String> = overrides.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!(" with {}", given.join(", "))
}

pub(super) fn instantiate(spec: &WorkloadSpec, overrides: &[(String, i64)]) -> Result<Workload, WorkloadError> {
    let raw = &spec.raw;
    let mut params: Vec<(String, i64)> = raw.params.iter().map(|(k, v)| (k.clone(), *v.get_ref())).collect();
    for (k, v) in overrides {
        match params.iter_mut().find(|(n, _)| n == k) {
            Some(_) if *v < 1 => {
                return Err(WorkloadError::BadReference {
                    reference: format!("{}:{k}={v}", spec.name),
                    message: format!("parameter `{k}` must be at least 1, got {v}"),
                });
            }
            Some(_) if *v > MAX_EXTENT => {
                return Err(WorkloadError::BadReference {
                    reference: format!("{}:{k}={v}", spec.name),
                    message: format!("parameter `{k}` is {v}, beyond the limit of {MAX_EXTENT} (2^40)"),
                });
            }
            Some(p) => p.1 = *v,
            None => {
                let known: Vec<&str> = params.iter().map(|(n, _)| n.as_str()).collect();
                return Err(WorkloadError::BadReference {
                    reference: format!("{}:{k}={v}", spec.name),
                    message: format!(
                        "workload `{}` has no parameter `{k}` (parameters: {})",
                        spec.name,
                        known.join(", ")
                    ),
                });
            }
        }
    }
    for (k, v) in &params {
        let off = || raw.params.get(k).map(|s| s.span().start).unwrap_or(0);
        if *v < 1 {
            return Err(spec.at(off(), format!("parameter `{k}` must be at least 1, got {v}")));
        }
        if *v > MAX_EXTENT {
            return Err(spec.at(off(), format!("parameter `{k}` is {v}, beyond the limit of {MAX_EXTENT} (2^40)")));
        }
    }

    // Tensors.
    let mut tensors = Vec::new();
    for (name, t) in &raw.tensors {
        let t_ref = t.get_ref();
        let dtype = DType::parse(t_ref.dtype.get_ref()).ok_or_else(|| {
            spec.at(
                t_ref.dtype.span().start,
                format!("unknown dtype `{}` (f16, bf16, f32, f64, i8, i32)", t_ref.dtype.get_ref()),
            )
        })?;
        let mut shape = Vec::new();
        for item in &t_ref.shape {
            let n = spec.size(item, &params, &format!("the shape of `{name}`"))?;
            if n < 1 {
                return Err(spec.at(
                    item.span().start,
                    format!("dimension of `{name}` must be at least 1, got {n}{}", with_overrides(overrides)),
                ));
            }
            shape.push(n);
        }
        if checked_product(shape.iter().copied()).is_none() {
            let dims: Vec<String> = shape.iter().map(i64::to_string).collect();
            return Err(spec.at(
                t.span().start,
                format!(
                    "tensor `{name}` of shape [{}] has more than {MAX_EXTENT} (2^40) elements, the limit",
                    dims.join(", ")
                ),
            ));
        }
        if shape.is_empty() {
            return Err(spec
                .at(t.span().start, format!("tensor `{name}` needs a non-empty shape (use [1] for a single value)")));
        }
        let role = match t_ref.role.as_ref().map(|r| (r.get_ref().as_str(), r.span().start)) {
            None | Some(("input", _)) => Role::Input,
            Some(("output", _)) => Role::Output,
            Some(("temp", _)) => Role::Temp,
            Some((other, off)) => {
                return Err(spec.at(off, format!("unknown role `{other}` (input, output or temp)")));
            }
        };
        let range = match &t_ref.range {
            None => None,
            Some(r) if r.len() == 2 => {
                if dtype.is_float() {
                    return Err(
                        spec.at(t.span().start, format!("`range` needs an integer tensor, `{name}` is {dtype}"))
                    );
                }
                let lo = spec.size(&r[0], &params, &format!("the range of `{name}`"))?;
                let hi = spec.size(&r[1], &params, &format!("the range of `{name}`"))?;
                if lo >= hi {
                    return Err(spec.at(r[0].span().start, format!("empty range [{lo}, {hi}) for `{name}`")));
                }
                // The range is half-open: its values are lo..=hi-1.
                let (min, max) = integer_limits(dtype);
                let outside = if lo < min {
                    Some((r[0].span().start, format!("down to {lo}")))
                } else if hi - 1 > max {
                    Some((r[1].span().start, format!("up to {}", hi - 1)))
                } else {
                    None
                };
                if let Some((off, values)) = outside {
                    return Err(spec.at(
                        off,
                        format!(
                            "`range` of `{name}` is [{lo}, {hi}): values {values} do not fit {dtype} ({min}..={max}){}",
                            with_overrides(overrides)
                        ),
                    ));
                }
                Some((lo, hi))
            }
            Some(_) => return Err(spec.at(t.span().start, "`range` must be [low, high)".to_string())),
        };
        tensors.push(Tensor { name: name.clone(), dtype, shape, role, range });
    }

    // Scalars.
    let mut scalars = Vec::new();
    for (name, s) in &raw.scalars {
        let d = s.get_ref().dtype.get_ref();
        let dtype = DType::parse(d).filter(|d| matches!(d, DType::F32 | DType::F64)).ok_or_else(|| {
            spec.at(s.get_ref().dtype.span().start, format!("scalar `{name}` must be f32 or f64, got `{d}`"))
        })?;
        if raw.tensors.contains_key(name) || raw.params.contains_key(name) {
            return Err(spec.at(s.span().start, format!("`{name}` is declared twice")));
        }
        let value = &s.get_ref().value;
        if !finite_in(dtype, *value.get_ref()) {
            return Err(spec.at(
                value.span().start,
                format!(
                    "scalar `{name}` has value {:?}, which is not finite in {dtype} (largest finite value {})",
                    value.get_ref(),
                    largest_finite(dtype)
                ),
            ));
        }
        scalars.push(ScalarParam { name: name.clone(), dtype, value: *value.get_ref() });
    }

    // Explicit axis extents.
    let mut axis_extents: Vec<(String, i64)> = Vec::new();
    for (name, item) in &raw.axes {
        let v = spec.size(item, &params, &format!("the extent of axis `{name}`"))?;
        if v < 1 {
            return Err(spec.at(item.span().start, format!("axis `{name}` needs an extent of at least 1")));
        }
        if v > MAX_EXTENT {
            return Err(spec.at(
                item.span().start,
                format!("axis `{name}` has extent {v}, beyond the limit of {MAX_EXTENT} (2^40)"),
            ));
        }
        axis_extents.push((name.clone(), v));
    }

    let mut stmts: Vec<Statement> = Vec::new();
    let mut written: Vec<bool> = vec![false; tensors.len()];
    if raw.compute.get_ref().is_empty() {
        return Err(spec.at(raw.compute.span().start, "`compute` needs at least one statement"));
    }
    for s in raw.compute.get_ref() {
        let base = s.span().start + 1;
        let stmt = statement(spec, s.get_ref(), base, &params, &tensors, &scalars, &axis_extents, &written)?;
        written[stmt.lhs.tensor.index()] = true;
        let mut name = tensors[stmt.lhs.tensor.index()].name.clone();
        let dup = stmts.iter().filter(|x| x.lhs.tensor == stmt.lhs.tensor).count();
        if dup > 0 {
            name = format!("{name}_{dup}");
        }
        stmts.push(Statement { name, ..stmt });
    }
    for (name, item) in &raw.axes {
        if !stmts.iter().any(|s| s.axes.iter().any(|a| a.name == *name)) {
            return Err(spec.at(item.span().start, format!("axis `{name}` in [axes] is not an axis of any statement")));
        }
    }
    for (i, t) in tensors.iter().enumerate() {
        let off = raw.tensors.get(&t.name).map(|s| s.span().start).unwrap_or(0);
        if t.role != Role::Input && !written[i] {
            return Err(spec.at(off, format!("{} tensor `{}` is never written", role_name(t.role), t.name)));
        }
        if t.role == Role::Output {
            check_written_everywhere(spec, TensorId(i as u32), t, &stmts, off)?;
        }
    }
    Ok(Workload { name: spec.name.clone(), description: raw.description.clone(), params, tensors, scalars, stmts })
}

/// Fails unless the statements writing the output `t` (declared at byte
/// `decl`) write every element of it: the kernel must, and an element no
/// statement writes would fail every correctness check. Without `[axes]`
/// a spatial axis spans the dimension it indexes on the left-hand side, so
/// only a shorter declared extent, or constant indices, leave a gap; the
/// error is at the declared extent when one is to blame.
fn check_written_everywhere(
    spec: &WorkloadSpec,
    id: TensorId,
    t: &Tensor,
    stmts: &[Statement],
    decl: usize,
) -> Result<(), WorkloadError> {
    let writers: Vec<&Statement> = stmts.iter().filter(|s| s.lhs.tensor == id).collect();
    let interval = |s: &Statement, idx: &Expr| match idx {
        Expr::Var(v) => (0, s.axes[v.index()].extent),
        Expr::Int(c) => (*c, *c + 1),
        // `statement` allows only axes and integer constants here.
        _ => (0, 0),
    };
    let regions: Vec<coverage::Region> =
        writers.iter().map(|s| s.lhs.indices.iter().map(|idx| interval(s, idx)).collect()).collect();
    let Some(gap) = coverage::first_unwritten(&regions, &t.shape) else {
        return Ok(());
    };
    let coords: Vec<String> = gap.iter().map(i64::to_string).collect();
    let element = format!("`{}[{}]`", t.name, coords.join(", "));
    // A statement that would write the element if its axes declared in
    // [axes] spanned their dimensions: the first such axis is to blame.
    for s in &writers {
        let mut short: Option<(usize, &Axis)> = None;
        let mut holds = true;
        for (d, idx) in s.lhs.indices.iter().enumerate() {
            let (lo, hi) = interval(s, idx);
            if lo <= gap[d] && gap[d] < hi {
                continue;
            }
            match idx {
                Expr::Var(v) if spec.raw.axes.contains_key(&s.axes[v.index()].name) => {
                    short.get_or_insert((d, &s.axes[v.index()]));
                }
                _ => holds = false,
            }
        }
        if let (true, Some((d, axis))) = (holds, short) {
            let off = spec.raw.axes.get(&axis.name).map(|item| item.span().start).unwrap_or(decl);
            return Err(spec.at(
                off,
                format!(
                    "axis `{}` has extent {} but indexes dimension {d} of output `{}`, which has {} elements: {element} is never written",
                    axis.name, axis.extent, t.name, t.shape[d]
                ),
            ));
        }
    }
    Err(spec.at(decl, format!("output tensor `{}` is not written everywhere: no statement writes {element}", t.name)))
}

/// The smallest and largest values of an integer dtype (of any other, those
/// of the 64-bit integers, which every range fits).
fn integer_limits(d: DType) -> (i64, i64) {
    match d {
        DType::I8 => (i64::from(i8::MIN), i64::from(i8::MAX)),
        DType::I32 => (i64::from(i32::MIN), i64::from(i32::MAX)),
        _ => (i64::MIN, i64::MAX),
    }
}

/// True if `v`, rounded to the float dtype `d` (to nearest, ties to even,
/// as tensor data is), is finite; integers are finite.
fn finite_in(d: DType, v: f64) -> bool {
    match d {
        DType::F16 => half::f16::from_f64(v).is_finite(),
        DType::BF16 => crate::data::bf16_from_f64(v).is_finite(),
        DType::F32 => (v as f32).is_finite(),
        DType::F64 => v.is_finite(),
        DType::I8 | DType::I32 => true,
    }
}

/// The largest finite value of a float dtype, as error messages print it.
fn largest_finite(d: DType) -> String {
    match d {
        DType::F16 => format!("{:?}", f32::from(half::f16::MAX)),
        DType::BF16 => format!("{:?}", f32::from(half::bf16::MAX)),
        DType::F32 => format!("{:?}", f32::MAX),
        DType::F64 | DType::I8 | DType::I32 => format!("{:?}", f64::MAX),
    }
}

fn role_name(r: Role) -> &'static str {
    match r {
        Role::Input => "input",
        Role::Output => "output",
        Role::Temp => "temp",
    }
}

#[allow(clippy::too_many_arguments)]
fn statement(
    spec: &WorkloadSpec,
    text: &str,
    base: usize,
    params: &[(String, i64)],
    tensors: &[Tensor],
    scalars: &[ScalarParam],
    axis_extents: &[(String, i64)],
    written: &[bool],
) -> Result<Statement, WorkloadError> {
    let at = |off: usize, msg: String| spec.at(base + off, msg);
    let tnames: Vec<(String, DType, bool)> =
        tensors.iter().map(|t| (t.name.clone(), t.dtype, t.range.is_some())).collect();
    let snames: Vec<(String, DType)> = scalars.iter().map(|s| (s.name.clone(), s.dtype)).collect();
    let mut scope = Scope { params, tensors: &tnames, scalars: &snames, axes: Vec::new(), known_vars: None };
    let raw: RawStmt = parse_statement(text, &mut scope).map_err(|e| at(e.offset, e.message))?;

    let lhs_t = &tensors[raw.lhs_tensor.index()];
    if lhs_t.role == Role::Input {
        return Err(at(raw.lhs_offset, format!("statement writes `{}`, which is an input tensor", lhs_t.name)));
    }
    if raw.lhs_indices.len() != lhs_t.shape.len() {
        return Err(at(
            raw.lhs_offset,
            format!(
                "`{}` has {} dimension(s) but {} index(es) are given",
                lhs_t.name,
                lhs_t.shape.len(),
                raw.lhs_indices.len()
            ),
        ));
    }
    // Spatial axes: plain variables on the left-hand side, each once.
    let mut spatial: Vec<VarId> = Vec::new();
    for e in &raw.lhs_indices {
        match e {
            Expr::Var(v) if !spatial.contains(v) => spatial.push(*v),
            Expr::Var(v) => {
                let n = &raw.axes[v.index()].0;
                return Err(at(raw.axes[v.index()].1, format!("axis `{n}` appears twice on the left-hand side")));
            }
            Expr::Int(_) => {}
            _ => {
                return Err(at(
                    raw.lhs_offset,
                    "left-hand side indices must be axis names or integer constants".to_string(),
                ))
            }
        }
    }
    // Order: spatial axes first (left-hand-side order), then reduction axes.
    let mut order: Vec<VarId> = spatial.clone();
    for i in 0..raw.axes.len() as u32 {
        if !order.contains(&VarId(i)) {
            order.push(VarId(i));
        }
    }
    let new_id = |v: VarId| VarId(order.iter().position(|x| *x == v).expect("every axis is ordered") as u32);
    let remap = |e: &Expr| e.substitute(&|v| Some(Expr::Var(new_id(v))));
    let lhs = Access { tensor: raw.lhs_tensor, indices: raw.lhs_indices.iter().map(remap).collect() };
    let rhs_raw = remap_raw(&raw.rhs, &remap);
    let axis_names: Vec<(String, usize)> = order.iter().map(|v| raw.axes[v.index()].clone()).collect();

    if raw.op == UpdateOp::Assign && axis_names.len() > spatial.len() {
        let red: Vec<&str> = axis_names[spatial.len()..].iter().map(|a| a.0.as_str()).collect();
        return Err(at(
            raw.lhs_offset,
            format!("axes {} appear only on the right-hand side, so the statement reduces over them: use `+=`, `max=` or `min=` instead of `=`", red.join(", ")),
        ));
    }

    // Extents.
    let mut accesses: Vec<(Access, usize)> = vec![(lhs.clone(), raw.lhs_offset)];
    collect_accesses(&rhs_raw, &mut accesses);
    // Ranks first: inferring extents reads each indexed dimension.
    for (acc, off) in &accesses {
        let t = &tensors[acc.tensor.index()];
        if acc.indices.len() != t.shape.len() {
            return Err(at(
                *off,
                format!(
                    "`{}` has {} dimension(s) but {} index(es) are given",
                    t.name,
                    t.shape.len(),
                    acc.indices.len()
                ),
            ));
        }
    }
    let mut extents = Vec::new();
    for (n, (name, off)) in axis_names.iter().enumerate() {
        if let Some((_, v)) = axis_extents.iter().find(|(a, _)| a == name) {
            extents.push(*v);
            continue;
        }
        let mut found: Option<(i64, String)> = None;
        for (acc, _) in &accesses {
            let t = &tensors[acc.tensor.index()];
            for (d, idx) in acc.indices.iter().enumerate() {
                if *idx == Expr::Var(VarId(n as u32)) {
                    let ext = t.shape[d];
                    match &found {
                        None => found = Some((ext, format!("`{}` dimension {d}", t.name))),
                        Some((e, w)) if *e != ext => {
                            return Err(at(*off, format!("axis `{name}` indexes dimensions of different sizes: {e} ({w}) and {ext} (`{}` dimension {d}); declare its extent in [axes]", t.name)));
                        }
                        _ => {}
                    }
                }
            }
        }
        match found {
            Some((e, _)) => extents.push(e),
            None => {
                return Err(at(
                    *off,
                    format!(
                        "cannot infer the extent of axis `{name}`: it is never a whole index; declare it in [axes]"
                    ),
                ));
            }
        }
    }

    if checked_product(extents.iter().copied()).is_none() {
        let axes: Vec<String> = axis_names.iter().zip(&extents).map(|((n, _), e)| format!("{n}={e}")).collect();
        return Err(at(
            raw.lhs_offset,
            format!(
                "the statement iterates over {} points ({}), more than the limit of {MAX_EXTENT} (2^40)",
                extents.iter().map(|e| i128::from(*e)).fold(1i128, i128::saturating_mul),
                axes.join(", ")
            ),
        ));
    }

    // Bounds of every access.
    let ctx = AxisCtx { extents: &extents, tensors };
    for (acc, off) in &accesses {
        let t = &tensors[acc.tensor.index()];
        for (d, idx) in acc.indices.iter().enumerate() {
            match bounds(idx, &ctx, 1) {
                Some((lo, hi)) if lo >= 0 && hi < t.shape[d] => {}
                Some((lo, hi)) => {
                    return Err(at(
                        *off,
                        format!(
                            "index {d} of `{}` ranges over {lo}..={hi} but the dimension has {} element(s)",
                            t.name, t.shape[d]
                        ),
                    ));
                }
                None if idx.has_load() => {
                    return Err(at(
                        *off,
                        format!("index {d} of `{}` cannot be bounded (indirect indices need a tensor `range`)", t.name),
                    ));
                }
                None => {
                    return Err(at(*off, format!("index {d} of `{}` overflows 64-bit arithmetic", t.name)));
                }
            }
        }
        if acc.tensor != lhs.tensor {
            if t.role != Role::Input && !written[acc.tensor.index()] {
                return Err(at(*off, format!("`{}` is read before any statement writes it", t.name)));
            }
        } else if *off != raw.lhs_offset {
            return Err(at(*off, format!("statement reads `{}`, which it writes; use a temp tensor", t.name)));
        }
    }
    // Integer index tensors must be inputs.
    for (acc, off) in &accesses {
        let indirect_from_non_input =
            |e: &Expr| matches!(e, Expr::Load(t, _) if tensors[t.index()].role != Role::Input);
        if acc.indices.iter().any(|idx| idx.any(&indirect_from_non_input)) {
            return Err(at(*off, "indirect indices must come from input tensors".to_string()));
        }
    }

    let types = Dtypes {
        tensors: tensors.iter().map(|t| t.dtype).collect(),
        scalars: scalars.iter().map(|s| s.dtype).collect(),
    };
    let rhs = typecheck(&rhs_raw, lhs_t.dtype, &at, &types)?;
    let axes = axis_names
        .iter()
        .zip(&extents)
        .enumerate()
        .map(|(i, ((name, _), e))| Axis {
            name: name.clone(),
            extent: *e,
            kind: if i < spatial.len() { AxisKind::Spatial } else { AxisKind::Reduce },
        })
        .collect();
    Ok(Statement { name: String::new(), axes, lhs, op: raw.op, rhs, text: text.to_string() })
}

fn remap_raw(r: &Raw, f: &dyn Fn(&Expr) -> Expr) -> Raw {
    match r {
        Raw::Num(..) | Raw::Scalar(..) => r.clone(),
        Raw::Read(t, idx, o) => Raw::Read(*t, idx.iter().map(f).collect(), *o),
        Raw::Bin(op, a, b, o) => Raw::Bin(*op, Box::new(remap_raw(a, f)), Box::new(remap_raw(b, f)), *o),
        Raw::Un(u, a, o) => Raw::Un(*u, Box::new(remap_raw(a, f)), *o),
        Raw::Cast(d, a, o) => Raw::Cast(*d, Box::new(remap_raw(a, f)), *o),
    }
}

fn collect_accesses(r: &Raw, out: &mut Vec<(Access, usize)>) {
    match r {
        Raw::Read(t, idx, o) => {
            out.push((Access { tensor: *t, indices: idx.clone() }, *o));
            for e in idx {
                collect_loads(e, *o, out);
            }
        }
        Raw::Bin(_, a, b, _) => {
            collect_accesses(a, out);
            collect_accesses(b, out);
        }
        Raw::Un(_, a, _) | Raw::Cast(_, a, _) => collect_accesses(a, out),
        Raw::Num(..) | Raw::Scalar(..) => {}
    }
}

fn collect_loads(e: &Expr, off: usize, out: &mut Vec<(Access, usize)>) {
    if let Expr::Load(t, idx) = e {
        out.push((Access { tensor: *t, indices: idx.clone() }, off));
    }
    for c in e.children() {
        collect_loads(c, off, out);
    }
}

/// The natural type of a raw value (`None` for untyped literals).
/// Element types of tensors and scalars, for typing statements.
pub(crate) struct Dtypes {
    pub tensors: Vec<DType>,
    pub scalars: Vec<DType>,
}

fn natural(r: &Raw, ty: &Dtypes) -> Option<DType> {
    match r {
        Raw::Num(..) => None,
        Raw::Scalar(i, _) => Some(ty.scalars[*i]),
        Raw::Read(t, _, _) => Some(ty.tensors[t.index()]),
        Raw::Bin(_, a, b, _) => natural(a, ty).or_else(|| natural(b, ty)),
        Raw::Un(_, a, _) => natural(a, ty),
        Raw::Cast(d, _, _) => Some(*d),
    }
}

pub(crate) fn typecheck(
    r: &Raw,
    lhs: DType,
    at: &dyn Fn(usize, String) -> WorkloadError,
    ty: &Dtypes,
) -> Result<Value, WorkloadError> {
    let t = natural(r, ty).unwrap_or(lhs);
    let v = typed(r, t, at, ty)?;
    if t == lhs {
        Ok(v)
    } else if t.widens_to(lhs) {
        Ok(Value::Cast(lhs, Box::new(v)))
    } else {
        Err(at(
            r.offset(),
            format!("the value has type {t} but the result is {lhs}; convert it explicitly with {lhs}(...)"),
        ))
    }
}

fn typed(
    r: &Raw,
    want: DType,
    at: &dyn Fn(usize, String) -> WorkloadError,
    ty: &Dtypes,
) -> Result<Value, WorkloadError> {
    let arith = |off: usize, what: &str| -> Result<(), WorkloadError> {
        if matches!(want, DType::F16 | DType::BF16 | DType::I8) {
            let conv = if want == DType::I8 { "i32" } else { "f32" };
            return Err(at(
                off,
                format!("{what} on {want} values is not supported; convert them first with {conv}(...)"),
            ));
        }
        Ok(())
    };
    Ok(match r {
        Raw::Num(v, o) => {
            if !want.is_float() && v.fract() != 0.0 {
                return Err(at(*o, format!("constant {v} is not an integer but the expression is {want}")));
            }
            if !want.is_float() {
                let (min, max) = integer_limits(want);
                if *v < min as f64 || *v > max as f64 {
                    return Err(at(*o, format!("constant {v} does not fit {want} ({min}..={max})")));
                }
            }
            // `inf` is infinite on purpose; a finite number must stay finite.
            if v.is_finite() && !finite_in(want, *v) {
                return Err(at(
                    *o,
                    format!("constant {v:?} is not finite in {want} (largest finite value {})", largest_finite(want)),
                ));
            }
            Value::Const(*v, want)
        }
        Raw::Scalar(i, _) => Value::Scalar(*i, ty.scalars[*i]),
        Raw::Read(t, idx, _) => Value::Read(Access { tensor: *t, indices: idx.clone() }, ty.tensors[t.index()]),
        Raw::Cast(d, a, _) => {
            let inner = natural(a, ty).unwrap_or(*d);
            let v = typed(a, inner, at, ty)?;
            if inner == *d {
                v
            } else {
                Value::Cast(*d, Box::new(v))
            }
        }
        Raw::Un(u, a, o) => {
            if matches!(u, UnFn::Exp | UnFn::Cos | UnFn::Sqrt) && !want.is_float() {
                return Err(at(*o, format!("`{}` needs a floating-point argument, found {want}", u.name())));
            }
            arith(*o, u.name())?;
            Value::Un(*u, Box::new(typed(a, want, at, ty)?))
        }
        Raw::Bin(op, a, b, o) => {
            let (ta, tb) = (natural(a, ty), natural(b, ty));
            if let (Some(x), Some(y)) = (ta, tb) {
                if x != y {
                    let wide = if x.widens_to(y) { y } else { x };
                    return Err(at(
                        *o,
                        format!("operands have different types {x} and {y}; convert one with {wide}(...)"),
                    ));
                }
            }
            arith(*o, "arithmetic")?;
            if *op == BinOp::Div && !want.is_float() {
                return Err(at(*o, format!("division of {want} values is not supported")));
            }
            Value::Bin(*op, Box::new(typed(a, want, at, ty)?), Box::new(typed(b, want, at, ty)?))
        }
    })
}
