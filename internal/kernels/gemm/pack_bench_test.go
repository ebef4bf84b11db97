package gemm

import "testing"

func BenchmarkPack(b *testing.B) {
	k := kernels[0]
	ws := getWorkspace(k)
	a := randSlice(64 * 784)
	w := randSlice(512 * 784)
	b.Run("A_N_64x256", func(b *testing.B) {
		for b.Loop() {
			packA(ws.a, false, a, 784, 64, 256, k.mr)
		}
		b.ReportMetric(float64(64*256)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
	})
	b.Run("A_T_64x256", func(b *testing.B) {
		for b.Loop() {
			packA(ws.a, true, w, 512, 64, 256, k.mr)
		}
		b.ReportMetric(float64(64*256)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
	})
	b.Run("B_N_256x512", func(b *testing.B) {
		for b.Loop() {
			packB(ws.b, false, w, 512, 256, 512, k.nr, k.panel)
		}
		b.ReportMetric(float64(512*256)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
	})
	b.Run("B_T_256x512", func(b *testing.B) {
		for b.Loop() {
			packB(ws.b, true, w, 784, 256, 512, k.nr, k.panel)
		}
		b.ReportMetric(float64(512*256)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
	})
}
