"""The RL environment's observations (lt_mlir.analysis.features) against values
worked out by hand from the programs' index expressions."""

import networkx as nx
import numpy as np
import pytest

import lt_mlir
from lt_mlir import programs
from lt_mlir.analysis import features as F
from lt_mlir.dialect.lt import parse_module

COLUMNS = F.LOOP_FEATURES
S0 = COLUMNS.index("stride_0")


def col(name: str) -> int:
    return COLUMNS.index(name)


def histogram(pairs, bins=16):
    """Hand-made histogram from (bin, weight) pairs."""
    out = np.zeros(bins, dtype=np.float32)
    for b, w in pairs:
        out[b] += w
    return out


def matmul_module(*args, **kwargs):
    return parse_module(programs.matmul(*args, **kwargs))


# matmul(4, 8, 16): L0 m (4), L1 n (8), L2 k (16); A: 4x16, B: 16x8, C: 4x8.
# Accesses: C[m, n] <- 0 under n (runs 4*8 = 32 times); under k (4*8*16 = 512
# times each): read A[m, k], read B[k, n], C[m, n] += .
# Strides:          w.r.t. m   n   k
#   A[m, k]                16  0   1
#   B[k, n]                 0  1   8
#   C[m, n] (both)          8  1   0
MATMUL_ROWS = {
    0: histogram([(5, 512), (0, 512), (4, 512), (4, 32)]),  # A 16 -> bin 5, B 0, C 8 -> bin 4
    1: histogram([(0, 512), (1, 512), (1, 512), (1, 32)]),
    2: histogram([(1, 512), (4, 512), (0, 512)]),  # A 1 -> bin 1, B 8 -> bin 4, C 0
}


def test_feature_names():
    assert COLUMNS[:9] == ["is_cursor", "size", "tail", "depth", "parallel", "unroll", "vectorize", "gpu_block", "gpu_thread"]
    assert COLUMNS[9:] == [f"stride_{b}" for b in range(16)]
    assert F.STRIDE_BINS == 32


def test_stride_bins():
    assert [F.stride_bin(s) for s in (0, 1, 2, 3, 4, 7, 8, -8, 16, 1 << 29, 1 << 30, 1 << 40)] == [0, 1, 2, 2, 3, 3, 4, 4, 5, 30, 31, 31]
    assert F.stride_bin(1 << 20, bins=16) == 15


def test_loops_tensor_matmul_by_hand():
    m = matmul_module(4, 8, 16)
    t = F.loops_tensor(m, 1, 5)
    assert t.shape == (5, len(COLUMNS)) and t.dtype == np.float32
    assert t[:, col("is_cursor")].tolist() == [0, 1, 0, 0, 0]
    assert t[:3, col("size")].tolist() == [4, 8, 16]
    assert t[:3, col("depth")].tolist() == [0, 1, 2]
    assert not t[:3, col("tail")].any() and not t[:3, col("parallel") : S0].any()  # no tails, no annotations
    for i, expected in MATMUL_ROWS.items():
        np.testing.assert_array_equal(t[i, S0:], expected, err_msg=f"L{i}")
    assert not t[3:].any()  # padding
    # the module object's operation works too, and no cursor marks no row
    t2 = F.loops_tensor(m.operation, None, 3)
    assert not t2[:, col("is_cursor")].any()
    np.testing.assert_array_equal(t2[:, 1:], t[:3, 1:])


def test_loops_tensor_truncates_and_checks_the_cursor():
    m = matmul_module(4, 8, 16)
    t = F.loops_tensor(m, 0, 2)
    assert t.shape == (2, len(COLUMNS))
    assert t[:, col("size")].tolist() == [4, 8]
    np.testing.assert_array_equal(t[1, S0:], MATMUL_ROWS[1])
    assert not F.loops_tensor(m, 2, 2)[:, col("is_cursor")].any()  # the cursor's row is dropped
    assert F.loops_tensor(m, None, 0).shape == (0, len(COLUMNS))
    for bad in (3, -1):
        with pytest.raises(ValueError):
            F.loops_tensor(m, bad, 4)


def test_annotations_land_in_their_columns():
    s = lt_mlir.Schedule(programs.matmul(4, 8, 16)).split(2, 4).parallel(0).unroll(2, 2).unroll(3, 0)
    m = s.module
    t = F.loops_tensor(m, 3, 4)
    assert t[:, col("parallel")].tolist() == [1, 0, 0, 0]
    assert t[:, col("unroll")].tolist() == [0, 0, 2, 4]  # full unroll of "k' in 4" -> its size
    assert t[:, col("size")].tolist() == [4, 8, 4, 4]
    assert t[:, col("depth")].tolist() == [0, 1, 2, 3]
    assert t[3, col("is_cursor")] == 1

    v = lt_mlir.Schedule(programs.pointwise_add(1024, blocks=[8])).vectorize(1, 8).module
    t = F.loops_tensor(v, None, 2)
    assert t[:, col("vectorize")].tolist() == [0, 8]
    assert t[:, col("size")].tolist() == [128, 8]

    g = lt_mlir.Schedule(programs.matmul(4, 8, 16)).gpu_map(0, "block").gpu_map(1, "thread").module
    t = F.loops_tensor(g, None, 3)
    assert t[:, col("gpu_block")].tolist() == [1, 0, 0]
    assert t[:, col("gpu_thread")].tolist() == [0, 1, 0]


def test_split_loop_strides_scale_by_the_inner_extent():
    # k split by 4: L2 "k in 4" steps k by 4, L3 "k' in 4" by 1
    m = lt_mlir.Schedule(programs.matmul(4, 8, 16)).split(2, 4).module
    t = F.loops_tensor(m, None, 4)
    np.testing.assert_array_equal(t[2, S0:], histogram([(3, 512), (6, 512), (0, 512)]))  # A 4, B 32, C 0
    np.testing.assert_array_equal(t[3, S0:], histogram([(1, 512), (4, 512), (0, 512)]))  # A 1, B 8, C 0
    np.testing.assert_array_equal(t[0, S0:], MATMUL_ROWS[0])  # the m and n loops did not change


def test_tails_weight_by_size_plus_one():
    # m = 33 split by 8: L0 "m in 4 r 1" (5 iterations, steps m by 8), L1 "m' in 8"
    m = matmul_module(33, 48, 64, m_blocks=[8])
    t = F.loops_tensor(m, None, 4)
    assert t[:, col("tail")].tolist() == [1, 0, 0, 0]
    inner = 5 * 8 * 48 * 64  # 122880 runs of each access in k
    store = 5 * 8 * 48
    # w.r.t. L0: A[m, k] 64*8 = 512 (bin 10), B 0, C[m, n] 48*8 = 384 (bin 9)
    np.testing.assert_array_equal(t[0, S0:], histogram([(10, inner), (0, inner), (9, inner), (9, store)]))
    # w.r.t. L3 (k): A 1, B 48 (bin 6), C 0
    np.testing.assert_array_equal(t[3, S0:], histogram([(1, inner), (6, inner), (0, inner)]))


def test_index_arithmetic_conv2d():
    # conv2d(c=2, h=8, w=8, kh=3, kw=3): X is 2x10x10, W 2x3x3, Y 8x8; loops y x c i j
    m = parse_module(programs.conv2d(2, 8, 8, 3, 3))
    t = F.loops_tensor(m, None, 5)
    inner = 8 * 8 * 2 * 3 * 3
    # X[c, y + i, x + j] moves 10 per i and 1 per j; W[c, i, j] 3 per i, 1 per j; Y 0
    np.testing.assert_array_equal(t[3, S0:], histogram([(4, inner), (2, inner), (0, inner)]))
    np.testing.assert_array_equal(t[4, S0:], histogram([(1, inner), (1, inner), (0, inner)]))
    # per c: X 100 (bin 7), W 9 (bin 4)
    np.testing.assert_array_equal(t[2, S0:], histogram([(7, inner), (4, inner), (0, inner)]))


def test_a_tile_base_outside_the_loop_does_not_move():
    # shrunk scratch buffers index with "m - m": the subtrahend sits outside
    # the inner m level, so each access stays at one element along every loop.
    s = lt_mlir.Schedule(programs.softmax(8, 32, m_blocks=[4])).shrink_buffers()
    m = s.module
    t = F.loops_tensor(m, None, 5)
    outer = 2 * 4
    inner = outer * 32
    # L1 "m' in 4": X/Y move 32 (bin 6): 3 reads and the store of Y; scratch:
    # 2 stores (outer), 2 reduces, 3 reads (inner), all stride 0
    np.testing.assert_array_equal(t[1, S0:], histogram([(6, 4 * inner), (0, 2 * outer + 5 * inner)]))
    np.testing.assert_array_equal(t[0, S0:], histogram([(8, 4 * inner), (0, 2 * outer + 5 * inner)]))


def test_only_dims_inside_the_loop_count():
    # S[m - base], base = lt.dim m taken outside the inner level: along L1 the
    # index moves 1; along L0 both move by 4 and the difference stays put.
    m = parse_module(
        """
func.func @f(%A: memref<8xf32> {lt.name = "A"}, %S: memref<4xf32> {lt.name = "S"}) {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %base = "lt.dim"() {dim = "m"} : () -> index
    "lt.loop"() ({
    ^bb0(%i1: index):
      %m = "lt.dim"() {dim = "m"} : () -> index
      %r = arith.subi %m, %base : index
      %a = memref.load %A[%m] : memref<8xf32>
      memref.store %a, %S[%r] : memref<4xf32>
    }) {dim = "m", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "m", size = 2 : i64, tail = 0 : i64} : () -> ()
  return
}
"""
    )
    t = F.loops_tensor(m, None, 2)
    np.testing.assert_array_equal(t[0, S0:], histogram([(3, 8), (0, 8)]))  # A 4, S 0
    np.testing.assert_array_equal(t[1, S0:], histogram([(1, 16)]))  # A 1, S 1


def test_unknown_indices_are_left_out():
    m = parse_module(
        """
func.func @f(%A: memref<16xf32> {lt.name = "A"}, %B: memref<16xf32> {lt.name = "B"}, %I: memref<16xi32> {lt.name = "I"}) {
  "lt.loop"() ({
  ^bb0(%it: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c15 = arith.constant 15 : index
    %j = arith.addi %i, %c1 : index
    %jj = arith.minsi %j, %c15 : index
    %a = memref.load %A[%jj] : memref<16xf32>
    %b = memref.load %A[%it] : memref<16xf32>
    %g = memref.load %I[%i] : memref<16xi32>
    %gi = arith.index_cast %g : i32 to index
    %c = memref.load %A[%gi] : memref<16xf32>
    %s = arith.addf %a, %b : f32
    %t = arith.addf %s, %c : f32
    %i2 = arith.muli %c2, %i : index
    %k = arith.subi %i2, %i : index
    memref.store %t, %B[%k] : memref<16xf32>
  }) {dim = "i", size = 16 : i64, tail = 0 : i64} : () -> ()
  return
}
"""
    )
    # only I[i] and B[2*i - i] are known: both stride 1
    np.testing.assert_array_equal(F.loops_tensor(m, 0, 1)[0, S0:], histogram([(1, 32)]))
    g = F.ir_graph_networkx(m)
    reads = {g.nodes[v]["text"]: d for u, v, d in g.edges(data=True) if d["kind"] == "read"}
    assert "stride" not in reads["%0 <- read A[minsi(i + 1, 15)]"]
    assert "stride" not in reads["%1 <- read A[L0.iteration]"]
    assert reads["%2 <- read I[i]"]["stride"] == 1
    # the gather: the load of I feeds the load of A through index_cast
    texts = {n: d.get("text") for n, d in g.nodes(data=True)}
    data = {(texts[u], texts[v]) for u, v, d in g.edges(data=True) if d["kind"] == "data"}
    assert ("%2 <- read I[i]", "%3 <- read A[index_cast(%2)]") in data


def test_stride_tensor_is_the_sum_of_the_loop_histograms():
    m = matmul_module(4, 8, 16)
    expected = np.zeros(32, dtype=np.float32)
    expected[:16] = sum(MATMUL_ROWS.values())
    np.testing.assert_array_equal(F.stride_tensor(m), expected)
    assert F.stride_tensor(m).dtype == np.float32 and F.stride_tensor(m).shape == (F.STRIDE_BINS,)

    for text in (programs.conv2d(2, 8, 8, 3, 3), programs.softmax(4, 16, n_blocks=[4]), programs.matmul(33, 48, 64, m_blocks=[8], clipped=True)):
        m = parse_module(text)
        pooled = F.stride_tensor(m)
        rows = F.loops_tensor(m, None, 16)[:, S0:].sum(axis=0)
        folded = np.concatenate([pooled[:15], [pooled[15:].sum()]])
        np.testing.assert_allclose(folded, rows)


def test_large_strides_fold_into_the_last_loop_column():
    # row_sum(2, 40000): A[m, n] moves 40000 per m -> bin 16 (2^15 <= 40000 < 2^16)
    m = parse_module(programs.row_sum(2, 40000))
    pooled = F.stride_tensor(m)
    assert pooled[16] == 2 * 40000 and pooled[15] == 0
    t = F.loops_tensor(m, None, 2)
    assert t[0, S0 + 15] == 2 * 40000  # folded
    # S[m] moves 1 per m (store 2 times, reduce 80000 times); w.r.t. n: A 1, S 0
    np.testing.assert_array_equal(t[0, S0:], histogram([(15, 80000), (1, 80002)]))
    np.testing.assert_array_equal(t[1, S0:], histogram([(1, 80000), (0, 80000)]))


def test_tree_of_matmul():
    m = matmul_module(4, 8, 16)
    tree = F.ir_tree_networkx(m)
    assert isinstance(tree, nx.DiGraph)
    assert nx.is_directed_acyclic_graph(tree) and nx.is_tree(tree)
    assert all("kind" in d for _, d in tree.nodes(data=True))
    kinds = [d["kind"] for _, d in tree.nodes(data=True)]
    assert kinds.count("function") == 1 and kinds.count("loop") == 3 and kinds.count("statement") == 5
    assert tree.number_of_edges() == 8
    assert tree.nodes["root"] == {"kind": "function", "name": "matmul"}
    loop = tree.nodes["L2"]
    assert (loop["index"], loop["dim"], loop["size"], loop["tail"], loop["annotations"]) == (2, "k", 16, 0, {})
    assert loop["features"] == F.loops_tensor(m, None, 3)[2].tolist()

    def children(node):
        out = sorted(tree.out_edges(node, data=True), key=lambda e: e[2]["order"])
        assert all(d["kind"] == "control" for _, _, d in out)
        return [tree.nodes[v].get("text", v) for _, v, _ in out]

    assert children("root") == ["L0"]
    assert children("L0") == ["L1"]
    assert children("L1") == ["C[m, n] <- 0.0", "L2"]
    assert children("L2") == ["%0 <- read A[m, k]", "%1 <- read B[k, n]", "%2 <- mul(%0, %1)", "C[m, n] += %2"]
    ops = [tree.nodes[v]["op"] for v in ("S0", "S1", "S2", "S3", "S4")]
    assert ops == ["memref.store", "memref.load", "memref.load", "arith.mulf", "lt.reduce"]


def test_graph_of_matmul():
    m = matmul_module(4, 8, 16)
    g = F.ir_graph_networkx(m)
    assert isinstance(g, nx.MultiDiGraph)
    assert all("kind" in d for _, d in g.nodes(data=True))
    buffers = {d["name"]: n for n, d in g.nodes(data=True) if d["kind"] == "buffer"}
    assert sorted(buffers) == ["A", "B", "C"]
    assert g.number_of_nodes() == 9 + 3
    a = g.nodes[buffers["A"]]
    assert (a["shape"], a["element"], a["nbytes"], a["scratch"]) == ((4, 16), "f32", 4 * 16 * 4, False)
    assert g.nodes[buffers["B"]]["shape"] == (16, 8)

    def edges(kind):
        return [(u, v, d) for u, v, d in g.edges(data=True) if d["kind"] == kind]

    assert len(edges("control")) == 8
    text = {n: d.get("text") for n, d in g.nodes(data=True)}
    reads = {(u, text[v], d["stride"], d["weight"]) for u, v, d in edges("read")}
    assert reads == {(buffers["A"], "%0 <- read A[m, k]", 1, 512), (buffers["B"], "%1 <- read B[k, n]", 8, 512)}
    assert [(text[u], v, d["stride"], d["weight"]) for u, v, d in edges("write")] == [("C[m, n] <- 0.0", buffers["C"], 1, 32)]
    assert [(text[u], v, d["stride"], d["reduce_kind"]) for u, v, d in edges("reduce")] == [("C[m, n] += %2", buffers["C"], 0, "add")]
    assert g.in_degree(buffers["A"]) == 0 and g.out_degree(buffers["A"]) == 1
    assert g.out_degree(buffers["C"]) == 0 and g.in_degree(buffers["C"]) == 2
    data = sorted((text[u], text[v]) for u, v, d in edges("data"))
    assert data == [
        ("%0 <- read A[m, k]", "%2 <- mul(%0, %1)"),
        ("%1 <- read B[k, n]", "%2 <- mul(%0, %1)"),
        ("%2 <- mul(%0, %1)", "C[m, n] += %2"),
    ]
    assert g.number_of_edges() == 8 + 2 + 1 + 1 + 3


def test_graph_scratch_buffers_and_several_functions():
    s = lt_mlir.Schedule(programs.matmul(32, 32, 32, m_blocks=[8])).cache(1, 0)
    m = s.module
    g = F.ir_graph_networkx(m)
    scratch = [d for _, d in g.nodes(data=True) if d["kind"] == "buffer" and d["scratch"]]
    assert len(scratch) == 1 and scratch[0]["shape"] == (32,) and scratch[0]["scope"] == "L1"

    two = parse_module(programs.matmul(4, 8, 16) + programs.pointwise_add(16, blocks=[4]))
    tree = F.ir_tree_networkx(two)
    assert {n for n, d in tree.nodes(data=True) if d["kind"] == "function"} == {"root:matmul", "root:add"}
    assert sorted(n for n, d in tree.nodes(data=True) if d["kind"] == "loop") == ["L0", "L1", "L2", "L3", "L4"]
    assert [v for _, v in tree.out_edges("root:add")] == ["L3"]
    g = F.ir_graph_networkx(two)
    assert sum(d["kind"] == "buffer" for _, d in g.nodes(data=True)) == 6
    t = F.loops_tensor(two, 4, 6)
    assert t[:, col("size")].tolist() == [4, 8, 16, 4, 4, 0]
    np.testing.assert_array_equal(t[4, S0:], histogram([(1, 48)]))  # A, B, C[i] per i': 16 each
    np.testing.assert_array_equal(t[3, S0:], histogram([(3, 48)]))  # per i: 4 (bin 3)
