package disthash
