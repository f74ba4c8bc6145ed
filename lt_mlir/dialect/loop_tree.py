def loop_tree(m): return ""
