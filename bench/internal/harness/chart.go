package harness

import (
	"fmt"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Chart writes a PNG of grouped bars, one colour per contender: on the left
// the one-caller p50 latency over stdio (in the legacy and the modern era)
// and over Streamable HTTP, on the right the calls/s of the throughput
// scenario (both eras), of the fan-out scenario and of the throughput over
// HTTP. (p99 is left to the tables: a peer's tail would dwarf every p50
// bar.)
func (r *Run) Chart(path string) error {
	left, err := r.groupedBars("1 caller, 1 server: p50 latency (µs, lower is better)", "µs",
		[]string{"stdio", "stdio, 2026-07-28", "Streamable HTTP"}, func(name string) []float64 {
			return []float64{field(r.find(ScenarioLatency, name), p50), field(r.find(ScenarioLatency, modernName(name)), p50),
				field(r.find(ScenarioLatencyHTTP, name), p50)}
		})
	if err != nil {
		return err
	}
	right, err := r.groupedBars(fmt.Sprintf("%d callers: throughput (calls/s, higher is better)", r.Sizes.Callers), "calls/s",
		[]string{"1 server", "1 server, 2026-07-28", fmt.Sprintf("%d servers (fan-out)", r.Sizes.FanoutServers), "1 server, HTTP"}, func(name string) []float64 {
			return []float64{field(r.find(ScenarioThroughput, name), cps), field(r.find(ScenarioThroughput, modernName(name)), cps),
				field(r.find(ScenarioFanout, name), cps), field(r.find(ScenarioThroughputHTTP, name), cps)}
		})
	if err != nil {
		return err
	}
	img := vgimg.New(30*vg.Centimeter, 10*vg.Centimeter)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Centimeter * 2, PadTop: vg.Millimeter * 3, PadBottom: vg.Millimeter * 3, PadLeft: vg.Millimeter * 3, PadRight: vg.Millimeter * 3}
	canvases := plot.Align([][]*plot.Plot{{left, right}}, tiles, dc)
	left.Draw(canvases[0][0])
	right.Draw(canvases[0][1])
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// groupedBars draws one group per label, one bar per contender in each.
func (r *Run) groupedBars(title, unit string, groups []string, values func(contender string) []float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = unit
	p.Y.Min = 0
	p.Legend.Top = true
	p.Legend.Left = true
	width := vg.Points(14)
	n := len(contenders)
	for i, c := range contenders {
		vals := plotter.Values(values(c.name()))
		bars, err := plotter.NewBarChart(vals, width)
		if err != nil {
			return nil, err
		}
		bars.Color = plotutil.Color(i)
		bars.LineStyle.Width = 0
		bars.Offset = width * vg.Length(float64(i)-float64(n-1)/2)
		p.Add(bars)
		p.Legend.Add(c.name(), bars)
	}
	p.NominalX(groups...)
	p.Y.Max *= 1.4 // room for the legend
	return p, nil
}
