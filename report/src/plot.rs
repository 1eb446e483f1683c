//! Box plots of the per-round max and mean FITF per class (the study's Figs. 6 and 7, with the
//! outliers drawn rather than dropped), as PNG. Text uses the Hack font embedded from
//! `epaint_default_fonts`, so no system font is needed.

use std::path::Path;

use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};

use crate::analysis::{BoxStats, Report};
use crate::ReportError;

const FAMILY: &str = "sans-serif";

fn register() -> Result<(), String> {
    register_font(
        FAMILY,
        FontStyle::Normal,
        epaint_default_fonts::HACK_REGULAR,
    )
    .map_err(|_| "the embedded font does not parse".to_owned())
}

/// Which per-round statistic to plot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    /// Max FITF of each non-zero round.
    Max,
    /// Mean non-zero FITF of each non-zero round.
    Mean,
}

/// Writes the figure's box plot to `path` (PNG, 900×500).
pub fn box_plot(report: &Report, figure: Figure, path: &Path) -> Result<(), ReportError> {
    let err = |message: String| ReportError::Plot {
        path: path.display().to_string(),
        message,
    };
    register().map_err(err)?;
    let boxes: Vec<(String, Option<&BoxStats>)> = report
        .classes
        .iter()
        .map(|((role, dir), c)| {
            let b = match figure {
                Figure::Max => c.fitf_max.as_ref(),
                Figure::Mean => c.fitf_mean.as_ref(),
            };
            (format!("{role}/{dir}"), b)
        })
        .collect();
    let title = match figure {
        Figure::Max => "Max FITF per non-zero round",
        Figure::Mean => "Mean non-zero FITF per non-zero round",
    };
    draw(&boxes, title, path).map_err(|e| err(e.to_string()))
}

fn draw(
    boxes: &[(String, Option<&BoxStats>)],
    title: &str,
    path: &Path,
) -> Result<(), Box<dyn std::error::Error>> {
    let top = boxes
        .iter()
        .filter_map(|(_, b)| b.map(|b| b.max))
        .fold(1.0_f64, f64::max)
        * 1.05;
    let root = BitMapBackend::new(path, (900, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let n = boxes.len().max(1) as f64;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, (FAMILY, 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(56)
        .build_cartesian_2d(-0.5..n - 0.5, 0.0..top)?;
    let names: Vec<String> = boxes
        .iter()
        .map(|(k, b)| match b {
            Some(b) => format!("{k} (n={})", b.n),
            None => format!("{k} (n=0)"),
        })
        .collect();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(boxes.len().max(1))
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 {
                names.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_desc("FITF")
        .label_style((FAMILY, 14))
        .draw()?;
    let fill = RGBColor(120, 160, 210);
    for (i, (_, b)) in boxes.iter().enumerate() {
        let Some(b) = b else { continue };
        let x = i as f64;
        let (l, r) = (x - 0.3, x + 0.3);
        chart.draw_series(std::iter::once(Rectangle::new(
            [(l, b.q1), (r, b.q3)],
            fill.filled(),
        )))?;
        chart.draw_series(std::iter::once(Rectangle::new(
            [(l, b.q1), (r, b.q3)],
            BLACK.stroke_width(1),
        )))?;
        for seg in [
            vec![(l, b.median), (r, b.median)],
            vec![(x, b.q3), (x, b.whisker_high)],
            vec![(x, b.q1), (x, b.whisker_low)],
            vec![(x - 0.15, b.whisker_high), (x + 0.15, b.whisker_high)],
            vec![(x - 0.15, b.whisker_low), (x + 0.15, b.whisker_low)],
        ] {
            chart.draw_series(std::iter::once(PathElement::new(
                seg,
                BLACK.stroke_width(2),
            )))?;
        }
        chart.draw_series(
            b.outliers
                .iter()
                .map(|&y| Circle::new((x, y), 2, RED.stroke_width(1))),
        )?;
    }
    root.present()?;
    Ok(())
}
