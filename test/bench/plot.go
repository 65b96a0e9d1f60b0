package main

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// series is a cumulative "objects ready over time" line.
type series struct {
	Name     string
	Timeline []float64 // sorted seconds at which each object became ready
	Color    color.Color
	Dashes   []vg.Length
}

// cumulative turns sorted ready times into a step line starting at (0, 0).
func cumulative(timeline []float64) plotter.XYs {
	pts := make(plotter.XYs, 0, len(timeline)+1)
	pts = append(pts, plotter.XY{})
	for i, t := range timeline {
		pts = append(pts, plotter.XY{X: t, Y: float64(i + 1)})
	}
	return pts
}

// plotReady draws ready objects over time for each series into a PNG.
func plotReady(path, title string, ss []series) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "seconds since the first create"
	p.Y.Label.Text = "ready"
	p.X.Min, p.Y.Min = 0, 0
	p.Add(plotter.NewGrid())
	p.Legend.Top, p.Legend.Left = true, true // the curves rise from bottom left to top right
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(8), -vg.Points(8)
	for _, s := range ss {
		if len(s.Timeline) == 0 {
			continue
		}
		l, err := plotter.NewLine(cumulative(s.Timeline))
		if err != nil {
			return fmt.Errorf("plotting %s: %w", s.Name, err)
		}
		l.StepStyle = plotter.PostStep
		l.LineStyle = draw.LineStyle{Color: s.Color, Width: vg.Points(2), Dashes: s.Dashes}
		p.Add(l)
		p.Legend.Add(s.Name, l)
	}
	p.X.Max *= 1.05
	p.Y.Max *= 1.15 // room for the legend above the last step
	return p.Save(8*vg.Inch, 4.5*vg.Inch, path)
}
