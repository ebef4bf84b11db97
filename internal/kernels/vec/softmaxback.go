package vec

import "fmt"

// SoftmaxBackRows recomputes softmax weights and takes their gradient,
// row by row, for rows rows of cols elements (ld apart) of p and dp:
//
//	p[i,j]  = e^(p[i,j] − lse[i])
//	dp[i,j] = p[i,j]·(dp[i,j] − d[i])
//
// With p holding scores, lse their rows' log-sum-exp, dp the gradient of
// the weights and d each row's Σ weight·gradient, p becomes the weights
// and dp the scores' gradient: attention's backward pass between its
// products, in one pass and one call for a whole tile. Exp's accuracy
// applies.
func SoftmaxBackRows(p, dp []float32, rows, cols, ld int, lse, d []float32) {
	if rows < 0 || cols < 0 || ld < 0 {
		panic(fmt.Sprintf("vec.SoftmaxBackRows: negative size or stride in rows=%d cols=%d ld=%d", rows, cols, ld))
	}
	if rows == 0 || cols == 0 {
		return
	}
	want := (rows-1)*ld + cols
	if len(p) < want || len(dp) < want {
		panic(fmt.Sprintf("vec.SoftmaxBackRows: p and dp have %d and %d elements, want %d", len(p), len(dp), want))
	}
	if len(lse) < rows || len(d) < rows {
		panic(fmt.Sprintf("vec.SoftmaxBackRows: lse and d have %d and %d elements, want %d", len(lse), len(d), rows))
	}
	softmaxBackRows(p, dp, rows, cols, ld, lse, d)
}

// softmaxBackRowsGo is SoftmaxBackRows's pure-Go twin.
func softmaxBackRowsGo(p, dp []float32, rows, cols, ld int, lse, d []float32) {
	for i := range rows {
		pr, gr := p[i*ld:i*ld+cols], dp[i*ld:i*ld+cols]
		for j, x := range pr {
			e := exp32(x - lse[i])
			pr[j] = e
			gr[j] = e * (gr[j] - d[i])
		}
	}
}
