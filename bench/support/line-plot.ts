// A small SVG line-chart renderer for benchmark plots (stacked panels sharing an x axis, one or
// two y axes per panel), turned into PNG with @resvg/resvg-js. Hand-written SVG keeps the plot a
// pure function of the numbers; resvg rasterizes it without a browser or native build step.
import { Resvg } from "@resvg/resvg-js";

export interface Series {
  label: string;
  color: string;
  points: Array<[number, number]>;
  /** Step line (replicas) rather than straight segments (load). */
  step?: boolean;
  /** Drawn against the panel's right axis. */
  right?: boolean;
  dashed?: boolean;
}

export interface Panel {
  title: string;
  series: Series[];
  leftLabel: string;
  rightLabel?: string;
  leftMax: number;
  rightMax?: number;
}

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

export function renderPanelsSvg(options: { title: string; xLabel: string; xMax: number; xTicks: number[]; panels: Panel[] }): string {
  const W = 1000;
  const PH = 150;
  const GAP = 44;
  const L = 60;
  const R = 60;
  const TOP = 50;
  const H = TOP + options.panels.length * (PH + GAP) + 30;
  const x = (v: number) => L + (v / options.xMax) * (W - L - R);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="DejaVu Sans, Arial, sans-serif">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2}" y="24" text-anchor="middle" font-size="16" font-weight="bold">${esc(options.title)}</text>`,
  ];
  options.panels.forEach((panel, i) => {
    const top = TOP + i * (PH + GAP);
    const bottom = top + PH;
    const yl = (v: number) => bottom - (v / panel.leftMax) * PH;
    const yr = (v: number) => bottom - (v / (panel.rightMax ?? 1)) * PH;
    out.push(`<text x="${L}" y="${top - 8}" font-size="13" font-weight="bold">${esc(panel.title)}</text>`);
    out.push(`<rect x="${L}" y="${top}" width="${W - L - R}" height="${PH}" fill="none" stroke="#999"/>`);
    for (const t of options.xTicks) {
      out.push(`<line x1="${x(t)}" y1="${top}" x2="${x(t)}" y2="${bottom}" stroke="#eee"/>`);
      out.push(`<text x="${x(t)}" y="${bottom + 14}" text-anchor="middle" font-size="10">${t}</text>`);
    }
    for (let k = 0; k <= 4; k++) {
      const v = (panel.leftMax * k) / 4;
      out.push(`<text x="${L - 6}" y="${yl(v) + 4}" text-anchor="end" font-size="10">${Number(v.toFixed(1))}</text>`);
      if (panel.rightMax !== undefined) {
        const rv = (panel.rightMax * k) / 4;
        out.push(`<text x="${W - R + 6}" y="${yr(rv) + 4}" font-size="10">${Number(rv.toFixed(1))}</text>`);
      }
    }
    out.push(`<text transform="translate(${L - 40},${top + PH / 2}) rotate(-90)" text-anchor="middle" font-size="11">${esc(panel.leftLabel)}</text>`);
    if (panel.rightLabel) out.push(`<text transform="translate(${W - R + 44},${top + PH / 2}) rotate(90)" text-anchor="middle" font-size="11">${esc(panel.rightLabel)}</text>`);
    let legendX = L + 250;
    for (const s of panel.series) {
      const y = s.right ? yr : yl;
      let d = "";
      s.points.forEach(([px, py], k) => {
        if (k === 0) d += `M${x(px).toFixed(1)},${y(py).toFixed(1)}`;
        else {
          if (s.step) d += `H${x(px).toFixed(1)}`;
          d += `L${x(px).toFixed(1)},${y(py).toFixed(1)}`;
        }
      });
      out.push(`<path d="${d}" fill="none" stroke="${s.color}" stroke-width="${s.step ? 2 : 1.2}"${s.dashed ? ' stroke-dasharray="4 3"' : ""}/>`);
      out.push(`<line x1="${legendX}" y1="${top - 12}" x2="${legendX + 18}" y2="${top - 12}" stroke="${s.color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="4 3"' : ""}/>`);
      out.push(`<text x="${legendX + 22}" y="${top - 8}" font-size="11">${esc(s.label)}</text>`);
      legendX += 30 + s.label.length * 6.5;
    }
  });
  const last = TOP + options.panels.length * (PH + GAP);
  out.push(`<text x="${(L + W - R) / 2}" y="${last - GAP + 32}" text-anchor="middle" font-size="11">${esc(options.xLabel)}</text>`);
  out.push("</svg>");
  return out.join("\n");
}

export function svgToPng(svg: string): Buffer {
  return new Resvg(svg, { fitTo: { mode: "original" }, font: { loadSystemFonts: true, defaultFontFamily: "DejaVu Sans" } }).render().asPng();
}
