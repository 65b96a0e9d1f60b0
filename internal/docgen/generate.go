package docgen

// Generate builds every generated reference file from the repository at root.
func Generate(root string) ([]File, error) {
	var files []File
	for _, gen := range []func(string) (File, error){flagsPage, featuresPage, valuesPage, crdsPage, rbacPage, metricsPage, conditionsPage} {
		f, err := gen(root)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}
