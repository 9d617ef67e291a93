//! The page: inline CSS, charts as inline SVG, tables; every text escaped.

use crate::data::{self, Group};
use std::fmt::Write;

/// Escapes text for HTML element content and quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Seconds with a unit that keeps three to four significant digits.
pub fn seconds(x: f64) -> String {
    match x {
        x if x >= 1.0 => format!("{x:.3} s"),
        x if x >= 1e-3 => format!("{:.3} ms", x * 1e3),
        x if x >= 1e-6 => format!("{:.3} us", x * 1e6),
        x => format!("{:.1} ns", x * 1e9),
    }
}

/// A count with a k/M/G suffix.
pub fn count(x: f64) -> String {
    match x {
        x if x >= 1e9 => format!("{:.2} G", x / 1e9),
        x if x >= 1e6 => format!("{:.2} M", x / 1e6),
        x if x >= 1e3 => format!("{:.1} k", x / 1e3),
        x => format!("{x:.0}"),
    }
}

/// An objective value with its unit; emulated figures say so.
pub fn objective(kind: &str, x: f64) -> String {
    match kind {
        "time_s" => seconds(x),
        "est_cycles" => format!("{} est. cycles (emulated)", count(x)),
        "instructions" => format!("{} instructions (emulated)", count(x)),
        other => format!("{x} {other}"),
    }
}

/// The y-axis description of an objective kind.
pub fn unit(kind: &str, emulated: bool) -> String {
    let base = match kind {
        "time_s" => "seconds per call",
        "est_cycles" => "estimated cycles",
        "instructions" => "instructions",
        other => other,
    };
    if emulated {
        format!("{base} (emulated)")
    } else {
        base.to_string()
    }
}

pub(crate) const STYLE: &str = "body{font-family:sans-serif;margin:2em auto;max-width:960px;color:#222;background:#fff}\
h1{font-size:1.6em}h2{font-size:1.25em;border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}\
h3{font-size:1.05em}table{border-collapse:collapse;font-size:.9em;margin:.5em 0}\
th,td{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}th{background:#f3f3f3}\
td.num{text-align:right;white-space:nowrap}pre{background:#f7f7f7;border:1px solid #ddd;padding:.5em;overflow-x:auto;font-size:.85em}\
figure{margin:1em 0}figure svg{max-width:100%;height:auto;border:1px solid #eee}figcaption{font-size:.85em;color:#555}\
.emulated{color:#a33;font-weight:bold}.note{color:#555;font-style:italic}";

/// The leaderboard table and each group's best trace.
pub fn leaderboard(groups: &[Group]) -> String {
    let mut out = String::new();
    out.push_str(
        "<table class=\"leaderboard\">\n<tr><th>workload</th><th>target</th><th>runner</th><th>VLs</th><th>best objective</th>\
         <th>GFLOPS</th><th>vs default</th><th>vs baselines</th><th>vector kind</th><th>record</th><th>trials</th><th>failures</th></tr>\n",
    );
    for g in groups {
        let leader = data::leader(g);
        let failures = g.records.iter().filter(|r| r.status != "ok").count();
        let cell = |x: Option<String>| x.map_or_else(|| "-".to_string(), |s| escape(&s));
        let best = leader.as_ref().and_then(|l| l.record.objective).map(|o| objective(&g.objective_kind, o));
        let gflops = leader.as_ref().and_then(|l| l.gflops).map(|x| format!("{x:.2}"));
        let vs_default = leader.as_ref().and_then(|l| l.vs_default).map(|x| format!("{x:.2}x"));
        let vs_baselines = leader
            .as_ref()
            .map(|l| l.vs_baselines.iter().map(|(n, x)| format!("{x:.2}x {n}")).collect::<Vec<_>>().join(", "))
            .filter(|s| !s.is_empty());
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            escape(&g.workload),
            escape(&g.target),
            escape(&g.runner),
            if g.emulated() { " <span class=\"emulated\">emulated</span>" } else { "" },
            cell(Some(g.vl_set.clone()).filter(|s| !s.is_empty())),
            cell(best),
            cell(gflops),
            cell(vs_default),
            cell(vs_baselines),
            cell(leader.as_ref().and_then(|l| l.record.vector_kind.clone())),
            cell(leader.as_ref().map(|l| l.record.id.to_string())),
            g.records.len(),
            failures
        );
    }
    out.push_str("</table>\n");
    for g in groups {
        let Some(l) = data::leader(g) else { continue };
        let trace =
            if l.record.trace.is_empty() { "(the default schedule: no transformation)" } else { &l.record.trace };
        let _ = writeln!(
            out,
            "<h3>Best schedule of {} (record {})</h3>\n<pre class=\"trace\">{}</pre>",
            escape(&g.label()),
            l.record.id,
            escape(trace)
        );
    }
    out
}

/// A chart's figure: the SVG and a caption.
pub fn figure(svg: &str, stem: &str, caption: &str, emulated: bool) -> String {
    format!(
        "<figure id=\"{}\">\n{}\n<figcaption>{}{} (<a href=\"{}.png\">PNG</a>)</figcaption>\n</figure>\n",
        escape(stem),
        svg.trim(),
        if emulated { "<span class=\"emulated\">Emulated figures.</span> " } else { "" },
        escape(caption),
        escape(stem)
    )
}
